package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// newLock is `writ lock create|list|delete`: the admin's locks, which halt
// what they match at once.
func newLock(e *env) *cobra.Command {
	var a adminFlags
	cmd := &cobra.Command{Use: "lock", Short: "Halt a tenant, principal, tool or node at once (admin)"}
	a.register(cmd)
	var spec client.LockSpec
	create := &cobra.Command{
		Use:   "create (--tenant T | --principal P | --tool NAME | --node ID)... [--ttl 1h] --reason TEXT",
		Short: "Make a lock: nothing it matches is admitted or dispatched, and what it matches is stopped",
		Long: `Make a lock. A lock matches the intents whose tenant, principal and tool, and the
node they would run on, equal every one of --tenant, --principal, --tool and --node
given (at least one). From the moment it is committed: a matching intent's admission
is refused (rejected, code locked); matching intents waiting for approval or queued
end canceled (code locked) with their receipts; matching intents that run are
stopped by their nodes as writ intent cancel stops them; and a locked node is given no
work. --ttl ends the lock by itself; without it, it holds until writ lock delete.
Prints {"lock": {"id", …, "created_at", "expires_at"?}}.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if spec.Tenant == "" && spec.Principal == "" && spec.Tool == "" && spec.Node == "" {
				return errors.New("name what to lock: --tenant, --principal, --tool or --node")
			}
			if spec.Reason == "" {
				return errors.New("--reason is required")
			}
			if spec.TTL < 0 || (spec.TTL > 0 && spec.TTL < time.Second) {
				return errors.New("--ttl must be at least 1s")
			}
			c, err := a.client(e)
			if err != nil {
				return err
			}
			l, err := c.CreateLock(context.Background(), spec)
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output == "text" {
				fmt.Fprintln(e.out, l.ID)
				return nil
			}
			return e.printJSON(protocol.LockResponse{Lock: *l})
		},
	}
	create.Flags().StringVar(&spec.Tenant, "tenant", "", "lock the intents of this tenant")
	create.Flags().StringVar(&spec.Principal, "principal", "", "lock the intents of this principal")
	create.Flags().StringVar(&spec.Tool, "tool", "", "lock the intents of this tool")
	create.Flags().StringVar(&spec.Node, "node", "", "lock this node: it is given no work, and what runs there is stopped")
	create.Flags().DurationVar(&spec.TTL, "ttl", 0, "end the lock by itself after this long (at most a year)")
	create.Flags().StringVar(&spec.Reason, "reason", "", "why: shown in the refusals and in the errors of what was stopped")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the locks in force",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := a.client(e)
			if err != nil {
				return err
			}
			locks, err := c.Locks(context.Background())
			if err != nil {
				return e.apiFailure(err)
			}
			if e.output != "text" {
				if locks == nil {
					locks = []protocol.LockView{}
				}
				return e.printJSON(map[string][]protocol.LockView{"locks": locks})
			}
			tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tPRINCIPAL\tTOOL\tNODE\tEXPIRES\tREASON")
			for _, l := range locks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(l.ID), cell(l.Tenant), cell(l.Principal), cell(l.Tool),
					cell(l.Node), cell(l.ExpiresAt), cell(l.Reason))
			}
			return tw.Flush()
		},
	}
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Remove a lock: what it held may be admitted and dispatched again",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return a.call(e, "DELETE", "locks/"+url.PathEscape(args[0]), nil)
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}
