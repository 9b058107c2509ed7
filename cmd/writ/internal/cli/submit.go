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
			return e.answer(r, err, wait > 0)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	cmd.Flags().StringVar(&approvalFile, "approval", "", "an approval to submit with the intent")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for a final state (at most 60s)")
	return cmd
}

func newIntentGet(e *env) *cobra.Command {
	r := intentReader{token: adminTokenFlag()}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "get (ID | --intent FILE) --tenant T --key ID=SECRET_FILE [--server URL] [--wait 30s]",
		Short: "Print an intent's state and output (a read signed with an orchestrator key, or with an admin token)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, c, err := r.client(e, args)
			if err != nil {
				return err
			}
			resp, err := c.Intent(context.Background(), id, wait)
			return e.answer(resp, err, wait > 0)
		},
	}
	r.register(cmd.Flags(), "the read")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for a final state (at most 60s)")
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
			return e.answer(r, err, false)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	return cmd
}

// readClient is a client for a read of a tenant's objects: signed with the
// tenant's orchestrator key (--tenant, --key ID=SECRET_FILE), or carrying a
// token (readTokenFlag: an admin's, or an auditor's where it may read).
func (e *env) readClient(server, token, tenant, key string) (*client.Client, error) {
	c, err := e.client(server, token)
	if err != nil {
		return nil, err
	}
	if key != "" {
		ref, err := parseKeyRef("key", key)
		if err != nil {
			return nil, err
		}
		secret, err := readKeyFile(ref.value)
		if err != nil {
			return nil, err
		}
		if tenant == "" {
			return nil, errors.New("--tenant is required with --key")
		}
		c.SignReads(tenant, ref.id, secret)
	} else if token == "" {
		return nil, errors.New("reads are signed: give --tenant and --key ID=SECRET_FILE, or a token (--token-file FILE or $WRIT_TOKEN)")
	}
	return c, nil
}

// The exit statuses of the commands that print an intent's state (docs/cli.md
// "Exit status"): 0 for completed, or for a state not yet final when the
// command was not asked to wait; 2 (Main's) when the command could not run.
const (
	exitRefused = 1 // the server refused the request, or the intent ended denied, rejected, expired or canceled
	exitFailed  = 4 // the intent was dispatched and ended failed or unknown
	exitWaiting = 5 // --wait ran out before the intent reached a final state
)

// stateExit is the exit status for an intent in state after a command that
// waited (or not) for a final state.
func stateExit(state string, waited bool) int {
	switch state {
	case "completed":
		return 0
	case "denied", "rejected", "expired", "canceled":
		return exitRefused
	case "failed", "unknown":
		return exitFailed
	}
	if waited {
		return exitWaiting
	}
	return 0
}

// answer prints an intent response, or an API error as {"error": …}, and
// exits as stateExit says (an API error is a refusal).
func (e *env) answer(r *client.IntentResponse, err error, waited bool) error {
	if err != nil {
		return e.refused(err)
	}
	if err := e.printIntent(r); err != nil {
		return err
	}
	if code := stateExit(r.State, waited); code != 0 {
		return exitError{code}
	}
	return nil
}

// printIntent prints an intent response: JSON, or a line of state and
// error followed by the output with -o text.
func (e *env) printIntent(r *client.IntentResponse) error {
	if e.output == "text" {
		fmt.Fprintf(e.out, "%s: %s", r.IntentID, r.State)
		if r.Error != nil {
			fmt.Fprintf(e.out, " (%s: %s)", r.Error.Code, r.Error.Message)
		}
		fmt.Fprintln(e.out)
		if r.Output != nil {
			// A signed read's answer: the tool's output, as it wrote it.
			if r.OutputEncoding != "" {
				fmt.Fprintf(e.out, "output (%s, not UTF-8):\n", r.OutputEncoding)
			}
			fmt.Fprint(e.out, *r.Output)
			if n := len(*r.Output); n > 0 && (*r.Output)[n-1] != '\n' {
				fmt.Fprintln(e.out)
			}
		}
		return nil
	}
	return e.printJSON(r)
}

// refused prints an API error as {"error": …} (or "refused: code: message"
// with -o text) and exits 1; any other error is returned as it is.
func (e *env) refused(err error) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		return err
	}
	if e.output == "text" {
		fmt.Fprintf(e.out, "refused: %s: %s\n", ae.Code, ae.Message)
	} else {
		e.printJSON(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: ae.Code, Message: ae.Message}})
	}
	return exitError{exitRefused}
}
