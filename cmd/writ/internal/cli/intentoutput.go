package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

func newIntentOutput(e *env) *cobra.Command {
	var server, key, tenant, token, file string
	cmd := &cobra.Command{
		Use:   "output ID --tenant T --key ID=SECRET_FILE [--server URL] [--file OUT]",
		Short: "Print an intent's output with its hashes (a read signed with an orchestrator key, or with --token)",
		Long: `Print GET /v1/intents/{id}/output: the tool's captured output with the hashes
and sizes the node's signed result commits to, checked against them. With
--file, write the output's bytes to that file (mode 0600), for
writ verify receipt --output.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := e.readClient(server, token, tenant, key)
			if err != nil {
				return err
			}
			o, err := c.Output(context.Background(), args[0])
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
			if file != "" {
				if err := writePrivate(file, o.Data); err != nil {
					return err
				}
			}
			if e.output == "text" {
				_, err := e.out.Write(o.Data)
				return err
			}
			return e.printJSON(o.OutputResponse)
		},
	}
	cmd.Flags().StringVar(&server, "server", defaultServer, "the control plane's API address")
	cmd.Flags().StringVar(&tenant, "tenant", "", "the intent's tenant")
	cmd.Flags().StringVar(&key, "key", "", "ID=SECRET_FILE: an orchestrator key of the tenant, to sign the read")
	cmd.Flags().StringVar(&token, "token", "", "an admin token instead (default: $WRIT_TOKEN)")
	cmd.Flags().StringVar(&file, "file", "", "also write the output's bytes to this file")
	return cmd
}

// writePrivate writes data to path, mode 0600, never through a symbolic link:
// a tool's output is its tenant's data.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
