package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// apiFailure prints a refused call as the admin commands do, exit 1.
func (e *env) apiFailure(err error) error {
	var ae *client.Error
	if errors.As(err, &ae) {
		if e.output == "text" {
			fmt.Fprintf(e.out, "refused: %s: %s\n", ae.Code, ae.Message)
		} else {
			e.printJSON(map[string]any{"ok": false, "error": map[string]string{"code": string(ae.Code), "message": ae.Message}})
		}
		return exitError{exitRefused}
	}
	return err
}

func newToken(e *env) *cobra.Command {
	var a adminFlags
	cmd := &cobra.Command{Use: "token", Short: "Issue dashboard sign-in tokens and one-time join tokens for nodes (admin)"}
	a.register(cmd)
	var role string
	var dash dashboardTokenFlags
	var labels []string
	var ttl time.Duration
	create := &cobra.Command{
		Use:   "create --role node [--labels k=v,...] [--ttl 1h] | --role viewer|approver|admin [--tenant T] [--approver NAME] [--ttl 720h] | --role auditor [--tenant T] [--outputs]",
		Short: "Issue a join token (a node enrolls with it once; it pins the cluster CA), a dashboard sign-in token or an auditor's token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role != "node" {
				if len(labels) > 0 {
					return errors.New("--labels is for --role node")
				}
				d := time.Duration(0)
				if cmd.Flags().Changed("ttl") {
					d = ttl
				}
				return createDashboardToken(e, &a, dash, role, d)
			}
			if dash.tenant != "" || dash.approver != "" || dash.outputs {
				return errors.New("--tenant, --approver and --outputs are for dashboard and auditor tokens")
			}
			lbl := map[string]string{}
			for _, kv := range labels {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--labels %q: want k=v", kv)
				}
				lbl[k] = v
			}
			c, err := a.client(e)
			if err != nil {
				return err
			}
			tok, err := c.CreateJoinToken(context.Background(), lbl, ttl)
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				fmt.Fprintln(e.out, tok.Token)
				return nil
			}
			return e.printJSON(tok)
		},
	}
	create.Flags().StringVar(&role, "role", "node", "what the token is for: node (enrollment), viewer, approver, admin (dashboard), or auditor (reads receipts)")
	dash.register(create)
	create.Flags().StringSliceVar(&labels, "labels", nil, "labels the node gets, k=v (repeat or comma-separate)")
	create.Flags().DurationVar(&ttl, "ttl", time.Hour, "how long the token may be used (dashboard tokens: default 30 days)")
	cmd.AddCommand(create, newTokenRevoke(e, &a), newTokenList(e, &a))
	return cmd
}

func newNodes(e *env) *cobra.Command {
	var a adminFlags
	cmd := &cobra.Command{Use: "nodes", Short: "List, show, drain and revoke nodes (admin)"}
	a.register(cmd)
	list := &cobra.Command{Use: "list", Short: "List enrolled nodes", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := a.client(e)
			if err != nil {
				return err
			}
			nodes, err := c.Nodes(context.Background())
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				return printNodeTable(e.out, nodes)
			}
			return e.printJSON(protocol.NodeList{Nodes: nodes})
		}}
	get := &cobra.Command{Use: "show NODE", Short: "Show one node", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := a.client(e)
			if err != nil {
				return err
			}
			n, err := c.Node(context.Background(), args[0])
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				return printNode(e.out, n)
			}
			return e.printJSON(n)
		}}
	textOutput(list, get)
	cmd.AddCommand(list, get)
	for _, act := range []struct{ use, short string }{
		{"drain", "Stop giving the node new dispatches (its runs finish)"},
		{"ready", "Undo a drain"},
		{"revoke", "Revoke the node for good: its session is closed and it can never reconnect"},
	} {
		cmd.AddCommand(&cobra.Command{Use: act.use + " NODE", Short: act.short, Args: cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				return a.call(e, "POST", "nodes/"+args[0]+"/"+act.use, nil)
			}})
	}
	return cmd
}
