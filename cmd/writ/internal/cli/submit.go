package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

const defaultServer = "http://127.0.0.1:7070"

func newIntentSubmit(e *env) *cobra.Command {
	var server, approvalFile string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "submit [--server URL] [--wait 30s] [--approval FILE] < intent.json",
		Short: "Submit a signed intent read from standard input; print the server's answer",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			raw, err := readInput(e.in, protocol.DefaultMaxBytes)
			if err != nil {
				return err
			}
			var approval []byte
			if approvalFile != "" {
				if approval, err = readSmallFile(approvalFile, protocol.DefaultMaxBytes); err != nil {
					return err
				}
			}
			c, err := e.client(server, "")
			if err != nil {
				return err
			}
			r, err := c.Submit(context.Background(), raw, approval, wait)
			return e.answer(r, err)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer, "the control plane's API address")
	cmd.Flags().StringVar(&approvalFile, "approval", "", "an approval to submit with the intent")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for a final state (at most 60s)")
	return cmd
}

func newIntentGet(e *env) *cobra.Command {
	var server, key, tenant string
	tokenFlag := adminTokenFlag()
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "get ID --tenant T --key ID=SECRET_FILE [--server URL] [--wait 30s]",
		Short: "Print an intent's state (a read signed with an orchestrator key, or with --token)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			c, err := e.client(server, token)
			if err != nil {
				return err
			}
			if key != "" {
				ref, err := parseKeyRef("key", key)
				if err != nil {
					return err
				}
				secret, err := readKeyFile(ref.value)
				if err != nil {
					return err
				}
				if tenant == "" {
					return errors.New("--tenant is required with --key")
				}
				c.SignReads(tenant, ref.id, secret)
			} else if token == "" {
				return errors.New("reads are signed: give --tenant and --key ID=SECRET_FILE, or an admin token (--token-file FILE or $WRIT_TOKEN)")
			}
			r, err := c.Intent(context.Background(), args[0], wait)
			return e.answer(r, err)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer, "the control plane's API address")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for a final state (at most 60s)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the intent's tenant")
	cmd.Flags().StringVar(&key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign the read")
	tokenFlag.register(cmd.Flags())
	return cmd
}

func newApprovalSubmit(e *env) *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "submit [--server URL] < approval.json",
		Short: "Submit a signed approval read from standard input",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			raw, err := readInput(e.in, protocol.DefaultMaxBytes)
			if err != nil {
				return err
			}
			c, err := e.client(server, "")
			if err != nil {
				return err
			}
			r, err := c.Approve(context.Background(), raw)
			return e.answer(r, err)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer, "the control plane's API address")
	return cmd
}

// answer prints an intent response, or an API error as {"error": …} with exit 1.
func (e *env) answer(r *client.IntentResponse, err error) error {
	var ae *client.Error
	if errors.As(err, &ae) {
		if e.output == "text" {
			fmt.Fprintf(e.out, "refused: %s: %s\n", ae.Code, ae.Message)
		} else {
			e.printJSON(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: ae.Code, Message: ae.Message}})
		}
		return exitError{1}
	}
	if err != nil {
		return err
	}
	if e.output == "text" {
		fmt.Fprintf(e.out, "%s: %s", r.IntentID, r.State)
		if r.Error != nil {
			fmt.Fprintf(e.out, " (%s: %s)", r.Error.Code, r.Error.Message)
		}
		fmt.Fprintln(e.out)
		return nil
	}
	return e.printJSON(r)
}
