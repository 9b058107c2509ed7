package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
)

// cancelExit is the exit status of a cancel: 0 once the intent is canceled,
// or while its cancel is under way and the command was not asked to wait;
// exitWaiting when --wait ran out first; exitRefused when the intent had
// already ended otherwise (the cancel came too late: it changed nothing).
func cancelExit(state string, waited bool) int {
	switch {
	case state == "canceled":
		return 0
	case state == "pending_approval" || state == "queued" || state == "dispatched":
		if waited {
			return exitWaiting
		}
		return 0
	}
	return exitRefused
}

func newIntentCancel(e *env) *cobra.Command {
	r := intentReader{token: adminTokenFlag()}
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel (ID | --intent FILE) --tenant T --key ID=SECRET_FILE [--server URL] [--wait 30s]",
		Short: "Cancel an intent (signed with an orchestrator key of its tenant, or with an admin token)",
		Long: `Cancel an intent: one waiting for approval or for a node ends canceled at once,
with a receipt; a dispatched one is stopped by its node (SIGTERM, then SIGKILL after
the tier's grace period), and ends canceled with the node's signed result. With
--wait, wait up to that long for the intent's final state. An intent that has
already ended is left as it is and printed.

Exit status: 0 once the intent is canceled (or its cancel is under way, without
--wait); 1 when the server refused, or the intent had already ended otherwise;
5 when --wait ran out first.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, c, err := r.client(e, args)
			if err != nil {
				return err
			}
			resp, err := c.CancelIntentWait(context.Background(), id, wait)
			if err != nil {
				return e.refused(err)
			}
			if err := e.printIntent(resp); err != nil {
				return err
			}
			if code := cancelExit(resp.State, wait > 0); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	r.register(cmd.Flags(), "the cancel")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the intent's final state (at most 60s)")
	return cmd
}

func newRun(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "run", Short: "Act on a run: all the intents of one agent run"}
	cmd.AddCommand(newRunCancel(e))
	return cmd
}

func newRunCancel(e *env) *cobra.Command {
	var server, key, tenant string
	tokenFlag := adminTokenFlag()
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel RUN --tenant T (--key ID=SECRET_FILE | --token-file FILE) [--server URL] [--wait 30s]",
		Short: "Cancel every intent of a run that has not ended",
		Long: `Cancel every intent of the tenant's run RUN that has not ended, as writ intent
cancel does each, and print the run's intents with their states. With --wait,
wait up to that long for them to end.

Exit status: 0 when no intent of the run is left running (or, without --wait,
once the cancels are under way); 1 when the server refused; 5 when --wait ran
out first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if tenant == "" {
				return fmt.Errorf("--tenant is required")
			}
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			c, err := e.readClient(server, token, tenant, key)
			if err != nil {
				return err
			}
			r, err := c.CancelRunWait(context.Background(), tenant, args[0], wait)
			if err != nil {
				return e.refused(err)
			}
			if err := e.printRunCancel(r); err != nil {
				return err
			}
			if wait > 0 {
				for _, in := range r.Intents {
					if cancelExit(in.State, true) == exitWaiting {
						return exitError{exitWaiting}
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the run's tenant")
	cmd.Flags().StringVar(&key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign the cancel")
	tokenFlag.register(cmd.Flags())
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the run's intents to end (at most 60s)")
	return cmd
}

func (e *env) printRunCancel(r *client.RunCancel) error {
	if e.output != "text" {
		return e.printJSON(r)
	}
	tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tERROR")
	for _, in := range r.Intents {
		code := ""
		if in.Error != nil {
			code = string(in.Error.Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(in.IntentID), cell(in.State), cell(code))
	}
	return tw.Flush()
}
