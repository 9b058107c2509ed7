package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func newReceipt(e *env) *cobra.Command {
	var server, key, tenant, intentFile string
	var wait time.Duration
	tokenFlag := readTokenFlag()
	cmd := &cobra.Command{Use: "receipt", Short: "Fetch receipts from the ledger"}
	get := &cobra.Command{
		Use:   "get (INDEX | --intent FILE) [--server URL] [--tenant T --key ID=SECRET_FILE | --token-file FILE]",
		Short: "Print a receipt with its inclusion proof and checkpoint, ready for writ verify receipt",
		Long: `Print a receipt with its inclusion proof and checkpoint, ready for writ verify
receipt. The receipt is read with a signed read of its tenant (--tenant, --key), or an
auditor or admin token (--token-file FILE, or $WRIT_TOKEN). Without credentials the server
answers only the leaf's hash, its proof and the checkpoint. --intent FILE names
the receipt by the signed intent it ended (waiting up to --wait for it), read
with the intent's tenant's key.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var i uint64
			var id string
			if intentFile != "" {
				var err error
				if id, err = intentArg(args, intentFile, &tenant); err != nil {
					return err
				}
			} else {
				var err error
				if len(args) != 1 {
					return errors.New("name the receipt: its INDEX, or --intent FILE (the signed intent it ended)")
				}
				if i, err = strconv.ParseUint(args[0], 10, 64); err != nil {
					return fmt.Errorf("INDEX %q is not a receipt index", args[0])
				}
			}
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			c, err := e.client(server, "")
			if token != "" || key != "" {
				c, err = e.readClient(server, token, tenant, key)
			}
			if err != nil {
				return err
			}
			var body []byte
			if id != "" {
				body, err = receiptOf(context.Background(), c, id, wait)
			} else {
				body, err = c.Receipt(context.Background(), i)
			}
			if err != nil {
				return e.refused(err)
			}
			if e.output == "text" {
				if body, err = indent(body); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintf(e.out, "%s\n", body)
			return err
		},
	}
	get.Flags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	get.Flags().StringVar(&tenant, "tenant", "", "the receipt's tenant")
	get.Flags().StringVar(&key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign the read")
	tokenFlag.register(get.Flags())
	get.Flags().StringVar(&intentFile, "intent", "", "the signed intent whose final receipt to get, instead of INDEX")
	get.Flags().DurationVar(&wait, "wait", 30*time.Second, "with --intent: how long to wait for the intent's final state")
	cmd.AddCommand(get)
	return cmd
}
