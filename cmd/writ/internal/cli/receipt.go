package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

func newReceipt(e *env) *cobra.Command {
	var server string
	cmd := &cobra.Command{Use: "receipt", Short: "Fetch receipts from the ledger"}
	get := &cobra.Command{
		Use:   "get INDEX [--server URL]",
		Short: "Print a receipt with its inclusion proof and checkpoint, ready for writ verify receipt",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			i, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("INDEX %q is not a receipt index", args[0])
			}
			c, err := e.client(server, "")
			if err != nil {
				return err
			}
			body, err := c.Receipt(context.Background(), i)
			var ae *client.Error
			if errors.As(err, &ae) {
				e.printJSON(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: ae.Code, Message: ae.Message}})
				return exitError{1}
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.out, "%s\n", body)
			return err
		},
	}
	get.Flags().StringVar(&server, "server", defaultServer(), "the control plane's API address")
	cmd.AddCommand(get)
	return cmd
}
