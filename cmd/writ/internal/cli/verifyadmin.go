package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/protocol"
)

// adminVerdict is what writ verify admin prints: the ledger verdict and,
// when valid, the entry it proved.
type adminVerdict struct {
	ledgerVerdict
	Entry *protocol.AdminEntry `json:"entry,omitempty"`
}

func newVerifyAdmin(e *env) *cobra.Command {
	var key, keyFile string
	cmd := &cobra.Command{
		Use:   "admin FILE (--key VERIFIER_KEY | --key-file FILE)",
		Short: "Verify an admin entry, its inclusion proof and its signed checkpoint",
		Long: `Verify an admin entry as GET /v1/receipts/{index} returns it (writ receipt get
INDEX): the checkpoint's signature with the note verifier key, the entry's
inclusion in the tree the checkpoint commits to, and that the leaf is an admin
entry (writ.admin/v1), not a receipt. Prints {"valid":true,…,"entry":{…}} or
{"valid":false,"error":"<code>","message":…}; exits 0 or 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			rp, c, err := provedLeaf(key, keyFile, args[0])
			if err != nil {
				return e.leafReport(c, err)
			}
			a, err := protocol.DecodeAdminEntry(rp.Receipt, 0)
			if err != nil {
				return e.outputReport(fmt.Errorf("the leaf is not an admin entry: %w", err))
			}
			if e.output == "text" {
				fmt.Fprintf(e.out, "valid against %s at size %d: %s %s of %s at %s\n", c.Origin, c.Size, a.Actor, a.Action, a.Object, a.RecordedAt)
				return nil
			}
			return e.printJSON(adminVerdict{ledgerVerdict: ledgerVerdict{Valid: true, Origin: c.Origin, Size: c.Size}, Entry: a})
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the ledger's note verifier key")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "a file holding the ledger's note verifier key (writ dev: DIR/ledger.pub)")
	return cmd
}
