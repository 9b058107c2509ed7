package cli

import (
	"context"
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

func newIntentOutput(e *env) *cobra.Command {
	var file string
	r := intentReader{token: readTokenFlag()}
	cmd := &cobra.Command{
		Use:   "output (ID | --intent FILE) --tenant T --key ID=SECRET_FILE [--server URL] [--file OUT]",
		Short: "Print an intent's output with its hashes (a read signed with an orchestrator key, or with --token)",
		Long: `Print GET /v1/intents/{id}/output: the tool's captured output with the hashes
and sizes the node's signed result commits to, checked against them. With
--file, write the output's bytes to that file (mode 0600), for
writ verify receipt --output.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, c, err := r.client(e, args)
			if err != nil {
				return err
			}
			o, err := c.Output(context.Background(), id)
			if err != nil {
				return e.refused(err)
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
	r.register(cmd.Flags(), "the read")
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
