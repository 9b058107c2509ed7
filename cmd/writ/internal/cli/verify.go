package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/ledger"
)

func newVerify(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "verify", Short: "Verify receipts and ledger bundles offline, with only a public key"}
	cmd.AddCommand(newVerifyReceipt(e), newVerifyBundle(e))
	return cmd
}

// ledgerVerdict is what the offline verify commands print.
type ledgerVerdict struct {
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	Origin  string `json:"origin,omitempty"`
	Size    int64  `json:"size,omitempty"`
}

func (e *env) ledgerReport(c ledger.Checkpoint, err error) error {
	if err != nil {
		v := ledgerVerdict{Error: ledger.Code(err), Message: err.Error()}
		if e.output == "text" {
			fmt.Fprintf(e.out, "invalid: %s: %s\n", v.Error, v.Message)
		} else if perr := e.printJSON(v); perr != nil {
			return perr
		}
		return exitError{1}
	}
	if e.output == "text" {
		fmt.Fprintf(e.out, "valid against %s at size %d\n", c.Origin, c.Size)
		return nil
	}
	return e.printJSON(ledgerVerdict{Valid: true, Origin: c.Origin, Size: c.Size})
}

func newVerifyReceipt(e *env) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "receipt FILE --key VERIFIER_KEY",
		Short: "Verify a receipt, its inclusion proof and its signed checkpoint",
		Long: `Verify a receipt as GET /v1/receipts/{index} returns it ({"receipt", "index",
"proof", "checkpoint"}): the checkpoint's signature with the note verifier key,
and the receipt's inclusion in the tree the checkpoint commits to. Prints
{"valid":true,…} or {"valid":false,"error":"<code>","message":…}; exits 0 or 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if key == "" {
				return fmt.Errorf("--key VERIFIER_KEY is required")
			}
			v, err := ledger.NewVerifier(key)
			if err != nil {
				return err
			}
			b, err := readSmallFile(args[0], 16<<20)
			if err != nil {
				return err
			}
			rp, err := ledger.DecodeReceiptProof(b)
			if err != nil {
				return e.ledgerReport(ledger.Checkpoint{}, err)
			}
			return e.ledgerReport(ledger.VerifyReceipt(v, rp))
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the ledger's note verifier key")
	return cmd
}

func newVerifyBundle(e *env) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "bundle FILE --key VERIFIER_KEY",
		Short: "Verify an exported ledger bundle with no server",
		Long: `Verify a bundle (receipts, inclusion proofs, checkpoints and the consistency
proofs between them): every checkpoint's signature, every consistency proof, and
every receipt's inclusion. The bundle's own key must be the one given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if key == "" {
				return fmt.Errorf("--key VERIFIER_KEY is required")
			}
			b, err := readSmallFile(args[0], 256<<20)
			if err != nil {
				return err
			}
			bundle, err := ledger.DecodeBundle(b)
			if err != nil {
				return e.ledgerReport(ledger.Checkpoint{}, err)
			}
			return e.ledgerReport(ledger.VerifyBundle(bundle, key))
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the ledger's note verifier key")
	return cmd
}
