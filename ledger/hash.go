package ledger

import (
	"encoding/base64"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// HashSize is the size of a leaf, node or root hash in bytes (SHA-256).
const HashSize = tlog.HashSize

// Hash is an RFC 6962 leaf, interior node or root hash. Its text and JSON
// form is standard base64 with padding, as in checkpoints and proofs.
type Hash [HashSize]byte

// LeafHash returns the RFC 6962 hash of a leaf: SHA-256(0x00 || leaf).
func LeafHash(leaf []byte) Hash { return Hash(tlog.RecordHash(leaf)) }

// EmptyRoot is the root hash of the tree with no leaves, SHA-256 of nothing.
func EmptyRoot() Hash {
	h, _ := tlog.TreeHash(0, nil)
	return Hash(h)
}

// String returns the standard base64 encoding of h.
func (h Hash) String() string { return base64.StdEncoding.EncodeToString(h[:]) }

// MarshalText encodes h as standard base64.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText decodes standard base64 of exactly HashSize bytes.
func (h *Hash) UnmarshalText(text []byte) error {
	parsed, err := ParseHash(string(text))
	if err != nil {
		return err
	}
	*h = parsed
	return nil
}

// ParseHash decodes the standard base64 (with padding) form of a hash.
// Anything else — other alphabets, missing padding, wrong length — is
// ErrMalformedHash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if base64.StdEncoding.EncodedLen(HashSize) != len(s) {
		return h, fmt.Errorf("%w: %d characters, want %d", ErrMalformedHash, len(s), base64.StdEncoding.EncodedLen(HashSize))
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != HashSize {
		return h, fmt.Errorf("%w: %q is not standard base64 of %d bytes", ErrMalformedHash, s, HashSize)
	}
	copy(h[:], b)
	return h, nil
}

// toTlog and fromTlog convert slices of hashes between Hash and tlog.Hash,
// both [32]byte: each returns a new slice, so neither aliases the other.
func toTlog(hs []Hash) []tlog.Hash {
	out := make([]tlog.Hash, len(hs))
	for i, h := range hs {
		out[i] = tlog.Hash(h)
	}
	return out
}

func fromTlog(hs []tlog.Hash) []Hash {
	out := make([]Hash, len(hs))
	for i, h := range hs {
		out[i] = Hash(h)
	}
	return out
}
