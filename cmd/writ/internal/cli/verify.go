package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

func newVerify(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "verify", Short: "Verify receipts and ledger bundles offline, with only a public key"}
	cmd.AddCommand(newVerifyReceipt(e), newVerifyAdmin(e), newVerifyBundle(e))
	return cmd
}

// ledgerVerdict is what the offline verify commands print.
type ledgerVerdict struct {
	Valid   bool   `json:"valid"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	Origin  string `json:"origin,omitempty"`
	Size    int64  `json:"size,omitempty"`
	// Output says what --output matched: "captured" (what the node kept,
	// all of it unless truncated) or "full" (everything the tool wrote).
	Output string `json:"output,omitempty"`
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
	var key, keyFile, outputFile string
	cmd := &cobra.Command{
		Use:   "receipt FILE (--key VERIFIER_KEY | --key-file FILE) [--output OUTPUT_FILE]",
		Short: "Verify a receipt, its inclusion proof and its signed checkpoint, and an output against it",
		Long: `Verify a receipt as GET /v1/receipts/{index} returns it ({"receipt", "index",
"proof", "checkpoint"}): the checkpoint's signature with the note verifier key,
and the receipt's inclusion in the tree the checkpoint commits to. With
--output, also check that the file is the tool's output the receipt's signed
result commits to: its captured output (captured_hash and captured_bytes; for a
writ.result/v1, the output it carries) or, for a truncated result, everything
the tool wrote (output_hash and output_bytes). Prints {"valid":true,…} or
{"valid":false,"error":"<code>","message":…}; exits 0 or 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			rp, c, err := provedLeaf(key, keyFile, args[0])
			if err != nil || outputFile == "" {
				return e.leafReport(c, err)
			}
			out, err := readSmallFile(outputFile, maxOutputFile)
			if err != nil {
				return err
			}
			match, err := receiptOutput(rp.Receipt, out)
			if err != nil {
				return e.outputReport(err)
			}
			if e.output == "text" {
				fmt.Fprintf(e.out, "valid against %s at size %d; the output is the %s output the result commits to (%d bytes)\n", c.Origin, c.Size, match, len(out))
				return nil
			}
			return e.printJSON(ledgerVerdict{Valid: true, Origin: c.Origin, Size: c.Size, Output: match})
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the ledger's note verifier key")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "a file holding the ledger's note verifier key (writ dev: DIR/ledger.pub)")
	cmd.Flags().StringVar(&outputFile, "output", "", "a file to check against the output the receipt's result commits to")
	// --output names the file here, which hides the global output format
	// flag: -o and --format set the format instead.
	cmd.Flags().StringVarP(&e.output, "format", "o", "json", "output format: json or text")
	return cmd
}

// provedLeaf reads a leaf as GET /v1/receipts/{index} returns it (a receipt
// or an admin entry, with its proof and checkpoint) from path, and verifies
// the checkpoint's signature with the note verifier key (--key or
// --key-file) and the leaf's inclusion. Its errors go to leafReport: a
// usageError (no key, an unreadable file) as it is, any other as a verdict.
func provedLeaf(key, keyFile, path string) (*ledger.ReceiptProof, ledger.Checkpoint, error) {
	key, err := verifierKey(key, keyFile)
	if err != nil {
		return nil, ledger.Checkpoint{}, usageError{err}
	}
	v, err := ledger.NewVerifier(key)
	if err != nil {
		return nil, ledger.Checkpoint{}, usageError{err}
	}
	b, err := readSmallFile(path, 16<<20)
	if err != nil {
		return nil, ledger.Checkpoint{}, usageError{err}
	}
	rp, err := ledger.DecodeReceiptProof(b)
	if err != nil {
		return nil, ledger.Checkpoint{}, err
	}
	c, err := ledger.VerifyReceipt(v, rp)
	if err != nil {
		return nil, c, err
	}
	return rp, c, nil
}

// usageError is a failure before any verification: a missing key, a file
// that cannot be read. It is returned as it is, not reported as a verdict.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// leafReport returns a usage error as it is, and reports anything else as
// provedLeaf's verdict.
func (e *env) leafReport(c ledger.Checkpoint, err error) error {
	var u usageError
	if errors.As(err, &u) {
		return u.error
	}
	return e.ledgerReport(c, err)
}

// maxOutputFile bounds --output: the largest output a manifest may allow.
const maxOutputFile = 64<<20 + 1

// receiptOutput checks out against the signed result inside a verified
// receipt. The receipt's inclusion under a signed checkpoint is what makes
// the result's hashes trustworthy offline: the server checked the node's
// signature before recording it.
func receiptOutput(receipt []byte, out []byte) (string, error) {
	r, err := protocol.DecodeReceipt(receipt, 0)
	if err != nil {
		return "", err
	}
	if r.Result == nil || r.Result.Kind() != '{' {
		return "", &protocol.Error{Code: protocol.CodeOutputMismatch, Message: "the receipt has no result (the tool never ran or never reported), so no output"}
	}
	res, err := protocol.DecodeResult(r.Result, 0)
	if err != nil {
		return "", err
	}
	m, err := res.CheckOutput(out)
	if err != nil {
		return "", err
	}
	if m == protocol.MatchFull {
		return "full", nil
	}
	return "captured", nil
}

// outputReport prints why an output does not match a valid receipt.
func (e *env) outputReport(err error) error {
	v := ledgerVerdict{Error: string(protocol.CodeOf(err)), Message: err.Error()}
	if v.Error == "" {
		v.Error = string(protocol.CodeMalformed)
	}
	if e.output == "text" {
		fmt.Fprintf(e.out, "invalid: %s: %s\n", v.Error, v.Message)
	} else if perr := e.printJSON(v); perr != nil {
		return perr
	}
	return exitError{1}
}

func newVerifyBundle(e *env) *cobra.Command {
	var key, keyFile string
	cmd := &cobra.Command{
		Use:   "bundle FILE (--key VERIFIER_KEY | --key-file FILE)",
		Short: "Verify an exported ledger bundle with no server",
		Long: `Verify a bundle (receipts, inclusion proofs, checkpoints and the consistency
proofs between them): every checkpoint's signature, every consistency proof, and
every receipt's inclusion. The bundle's own key must be the one given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			key, err := verifierKey(key, keyFile)
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&keyFile, "key-file", "", "a file holding the ledger's note verifier key (writ dev: DIR/ledger.pub)")
	return cmd
}

// verifierKey is the ledger's note verifier key from --key or --key-file
// (a public key: a file only spares copying it).
func verifierKey(key, file string) (string, error) {
	switch {
	case key != "" && file != "":
		return "", fmt.Errorf("give --key or --key-file, not both")
	case file != "":
		b, err := readSmallFile(file, 4<<10)
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	case key == "":
		return "", fmt.Errorf("the ledger's verifier key is required: --key VERIFIER_KEY or --key-file FILE")
	}
	return key, nil
}
