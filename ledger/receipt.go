package ledger

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/mod/sumdb/note"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// ReceiptProof is a receipt with its inclusion proof and the signed checkpoint
// it is proved against: the body of GET /v1/receipts/{index} (PROTOCOL.md §5)
// and one entry of a Bundle. The leaf it proves is JCS(Receipt).
type ReceiptProof struct {
	Receipt    jsontext.Value `json:"receipt"`
	Index      int64          `json:"index"`
	Proof      Proof          `json:"proof"`
	Checkpoint string         `json:"checkpoint"`
}

// DecodeReceiptProof parses the JSON of a ReceiptProof. Any problem wraps
// ErrMalformedBundle (or ErrMalformedProof for the proof).
func DecodeReceiptProof(data []byte) (*ReceiptProof, error) {
	var rp ReceiptProof
	if err := jsonx.UnmarshalLenient(data, &rp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedBundle, err)
	}
	if err := rp.validate(); err != nil {
		return nil, err
	}
	return &rp, nil
}

// validate checks that every member is present.
func (rp *ReceiptProof) validate() error {
	switch {
	case len(rp.Receipt) == 0 || string(rp.Receipt) == "null":
		return fmt.Errorf("%w: no receipt", ErrMalformedBundle)
	case rp.Proof == nil:
		return fmt.Errorf("%w: no proof", ErrMalformedBundle)
	case rp.Checkpoint == "":
		return fmt.Errorf("%w: no checkpoint", ErrMalformedBundle)
	}
	return nil
}

// Leaf returns the leaf bytes the receipt stands for: its canonical JSON. A
// receipt that cannot be canonicalized (duplicate names, numbers beyond
// I-JSON, invalid UTF-8) is ErrMalformedBundle.
func (rp *ReceiptProof) Leaf() ([]byte, error) {
	leaf, err := protocol.Canonicalize(rp.Receipt)
	if err != nil {
		return nil, fmt.Errorf("%w: receipt: %v", ErrMalformedBundle, err)
	}
	return leaf, nil
}

// VerifyReceipt checks a ReceiptProof offline with only a verifier: the
// checkpoint's signature and origin, the receipt's own index member (if it has
// one) against the proved index, and the inclusion proof. It returns the
// checkpoint the receipt was proved against; every failure wraps one of the
// package's errors and names the leaf (LeafError).
func VerifyReceipt(v note.Verifier, rp *ReceiptProof) (Checkpoint, error) {
	c, err := verifyReceipt(v, rp)
	if err != nil {
		return Checkpoint{}, &LeafError{Index: rp.Index, Err: err}
	}
	return c, nil
}

func verifyReceipt(v note.Verifier, rp *ReceiptProof) (Checkpoint, error) {
	if err := rp.validate(); err != nil {
		return Checkpoint{}, err
	}
	leaf, err := rp.Leaf()
	if err != nil {
		return Checkpoint{}, err
	}
	var own struct {
		Index *int64 `json:"index"`
	}
	if err := jsonx.UnmarshalLenient(leaf, &own); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: receipt is not an object with an integer index: %v", ErrMalformedBundle, err)
	}
	if own.Index != nil && *own.Index != rp.Index {
		return Checkpoint{}, fmt.Errorf("%w: receipt says %d, proof is for %d", ErrIndexMismatch, *own.Index, rp.Index)
	}
	return VerifyInclusion(v, []byte(rp.Checkpoint), rp.Index, leaf, rp.Proof)
}
