package ledger

import (
	"fmt"

	"github.com/writhq/writ/internal/jsonx"
)

// maxProofLen bounds decoded proofs: a consistency proof of a tree of 2^63
// leaves has at most 2*63 hashes, so anything longer is not a proof.
const maxProofLen = 128

// Proof is an RFC 6962 inclusion or consistency proof: a list of hashes. On the
// wire (PROTOCOL.md §5) it is a JSON array of standard base64 strings.
type Proof []Hash

// MarshalJSON encodes p as an array of base64 strings; a nil proof is [].
func (p Proof) MarshalJSON() ([]byte, error) { return jsonx.Marshal(p.Strings()) }

// UnmarshalJSON decodes an array of base64 strings, wrapping any problem in
// ErrMalformedProof.
func (p *Proof) UnmarshalJSON(data []byte) error {
	var s []string
	if err := jsonx.UnmarshalLenient(data, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedProof, err)
	}
	if s == nil && string(data) != "[]" {
		return fmt.Errorf("%w: null is not a proof", ErrMalformedProof)
	}
	parsed, err := ParseProof(s)
	if err != nil {
		return err
	}
	*p = parsed
	return nil
}

// ParseProof decodes the wire form of a proof: a list of base64 hashes.
func ParseProof(hashes []string) (Proof, error) {
	if len(hashes) > maxProofLen {
		return nil, fmt.Errorf("%w: %d hashes, at most %d", ErrMalformedProof, len(hashes), maxProofLen)
	}
	p := make(Proof, len(hashes))
	for i, s := range hashes {
		h, err := ParseHash(s)
		if err != nil {
			return nil, fmt.Errorf("%w: hash %d: %v", ErrMalformedProof, i, err)
		}
		p[i] = h
	}
	return p, nil
}

// Strings returns the wire form of p.
func (p Proof) Strings() []string {
	s := make([]string, len(p))
	for i, h := range p {
		s[i] = h.String()
	}
	return s
}
