package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/internal/buildinfo"
)

func newVersion(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of writ and of the protocol it speaks",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := buildinfo.Get()
			if e.output == "text" {
				_, err := fmt.Fprintf(e.out, "writ %s (protocol %s, %s, %s)\n", v.Version, v.Protocol, v.Go, v.Platform)
				return err
			}
			return e.printJSON(v)
		},
	}
}
