package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

// newLedgerAdmin lists the admin entries of the ledger.
func newLedgerAdmin(e *env, server *string) *cobra.Command {
	var before uint64
	var limit int
	tokenFlag := readTokenFlag()
	cmd := &cobra.Command{
		Use:   "admin [--before INDEX] [--limit N] [--token-file FILE]",
		Short: "List the admin entries (who changed which policy, tool, key, tenant, token, node or lock), newest first (an admin or auditor token)",
		Long: `List the ledger's admin entries (writ.admin/v1), newest first: the ledger index,
time, actor, action, object, tenant, and the hashes of the object's state before and
after. An auditor token of one tenant lists that tenant's entries. Each entry is
proved like a receipt: writ receipt get INDEX, then writ verify admin FILE.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			token, err := tokenFlag.get(e)
			if err != nil {
				return err
			}
			if token == "" {
				return errors.New("admin entries are read with an admin or auditor token: --token-file FILE or $WRIT_TOKEN")
			}
			c, err := e.client(*server, token)
			if err != nil {
				return err
			}
			entries, err := c.AdminEntries(context.Background(), before, limit)
			if err != nil {
				return e.apiFailure(err)
			}
			if entries == nil {
				entries = []protocol.AdminEntry{}
			}
			if e.output != "text" {
				return e.printJSON(map[string][]protocol.AdminEntry{"entries": entries})
			}
			tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "INDEX\tRECORDED\tACTOR\tACTION\tOBJECT\tTENANT\tBEFORE\tAFTER")
			for _, a := range entries {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Index, a.RecordedAt, cell(a.Actor), a.Action, cell(a.Object),
					cell(a.Tenant), cell(shortHash(a.Before)), cell(shortHash(a.After)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().Uint64Var(&before, "before", 0, "list entries below this ledger index (to page back)")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many (default 100, at most 1000)")
	tokenFlag.register(cmd.Flags())
	return cmd
}

// shortHash shortens a "sha256:" hash for a table: its first 12 hex digits.
func shortHash(h string) string {
	if len(h) > len("sha256:")+12 {
		return h[:len("sha256:")+12]
	}
	return h
}
