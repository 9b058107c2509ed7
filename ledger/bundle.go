package ledger

import (
	"fmt"
	"slices"

	"github.com/writhq/writ/internal/jsonx"
)

// maxBundleCheckpoints bounds the checkpoint chain of one bundle.
const maxBundleCheckpoints = 1 << 16

// Bundle is evidence that needs no server: receipts with inclusion proofs, the
// signed checkpoints they are proved against, consistency proofs chaining
// those checkpoints in order of size, and the verifier key of the log. It is
// what `writ ledger export` writes and `writ verify bundle` reads.
type Bundle struct {
	// VerifierKey names the log's key, for the reader's information: the
	// verifier always passes the key it trusts, and a bundle naming another is
	// rejected.
	VerifierKey string `json:"verifier_key"`
	// Checkpoints are signed notes in increasing order of tree size.
	Checkpoints []string `json:"checkpoints"`
	// Consistency[i] proves that Checkpoints[i+1] extends Checkpoints[i].
	Consistency []Proof `json:"consistency"`
	// Receipts are each proved against one of Checkpoints, verbatim.
	Receipts []ReceiptProof `json:"receipts"`
}

// DecodeBundle parses a bundle and checks its shape; any problem wraps
// ErrMalformedBundle or ErrMalformedProof. It checks no signature or proof.
func DecodeBundle(data []byte) (*Bundle, error) {
	var b Bundle
	if err := jsonx.UnmarshalLenient(data, &b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedBundle, err)
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	return &b, nil
}

// validate checks the bundle's shape.
func (b *Bundle) validate() error {
	switch {
	case b.VerifierKey == "":
		return fmt.Errorf("%w: no verifier_key", ErrMalformedBundle)
	case len(b.Checkpoints) == 0:
		return fmt.Errorf("%w: no checkpoints", ErrMalformedBundle)
	case len(b.Checkpoints) > maxBundleCheckpoints:
		return fmt.Errorf("%w: %d checkpoints, at most %d", ErrMalformedBundle, len(b.Checkpoints), maxBundleCheckpoints)
	case len(b.Consistency) != len(b.Checkpoints)-1:
		return fmt.Errorf("%w: %d checkpoints need %d consistency proofs, got %d",
			ErrMalformedBundle, len(b.Checkpoints), len(b.Checkpoints)-1, len(b.Consistency))
	}
	for i := range b.Receipts {
		rp := &b.Receipts[i]
		if err := rp.validate(); err != nil {
			return fmt.Errorf("receipt %d: %w", i, err)
		}
		if !slices.Contains(b.Checkpoints, rp.Checkpoint) {
			return fmt.Errorf("%w: receipt %d is proved against a checkpoint the bundle does not list", ErrMalformedBundle, i)
		}
	}
	return nil
}

// VerifyBundle checks a bundle with the verifier key the caller trusts: the
// bundle names the same key, every checkpoint is signed by it, each checkpoint
// is consistent with the one before (so no history was rewritten between
// them), and every receipt is included in its checkpoint. It returns the newest
// checkpoint. Errors say which checkpoint or receipt failed and wrap the
// package's errors (a receipt failure is a *LeafError).
func VerifyBundle(b *Bundle, trustedKey string) (Checkpoint, error) {
	v, err := NewVerifier(trustedKey)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := b.validate(); err != nil {
		return Checkpoint{}, err
	}
	if b.VerifierKey != trustedKey {
		return Checkpoint{}, fmt.Errorf("%w: bundle names %q", ErrUntrustedKey, b.VerifierKey)
	}
	cps := make([]Checkpoint, len(b.Checkpoints))
	for i, signed := range b.Checkpoints {
		if cps[i], err = OpenCheckpoint([]byte(signed), v); err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint %d: %w", i, err)
		}
		if i == 0 {
			continue
		}
		if err := CheckConsistency(cps[i-1], cps[i], b.Consistency[i-1]); err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint %d (size %d) after checkpoint %d (size %d): %w",
				i, cps[i].Size, i-1, cps[i-1].Size, err)
		}
	}
	for i := range b.Receipts {
		if _, err := VerifyReceipt(v, &b.Receipts[i]); err != nil {
			return Checkpoint{}, fmt.Errorf("receipt %d: %w", i, err)
		}
	}
	return cps[len(cps)-1], nil
}
