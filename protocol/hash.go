package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// HashPrefix starts every hash written in the protocol: "sha256:" + lowercase hex.
const HashPrefix = "sha256:"

// FormatHash writes a SHA-256 digest as the protocol writes hashes.
func FormatHash(sum [sha256.Size]byte) string {
	var b [len(HashPrefix) + 2*sha256.Size]byte
	copy(b[:], HashPrefix)
	hex.Encode(b[len(HashPrefix):], sum[:])
	return string(b[:])
}

// HashBytes returns the protocol hash of b: "sha256:" + hex(SHA-256(b)).
func HashBytes(b []byte) string { return FormatHash(sha256.Sum256(b)) }

// ParseHash parses "sha256:" + 64 lowercase hex digits.
func ParseHash(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if !validHash(s) {
		return sum, malformed("hash %.80q is not sha256: followed by 64 lowercase hex digits", s)
	}
	hex.Decode(sum[:], []byte(s[len(HashPrefix):]))
	return sum, nil
}

func validHash(s string) bool {
	if len(s) != len(HashPrefix)+2*sha256.Size || !strings.HasPrefix(s, HashPrefix) {
		return false
	}
	for i := len(HashPrefix); i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PayloadHash computes payload_hash = sha256(JCS({"params": params, "tool": tool})).
// params must be a JSON object.
func PayloadHash(tool string, params []byte) (string, error) {
	if jsontext.Value(params).Kind() != '{' {
		return "", malformed("params must be a JSON object")
	}
	cp, err := Canonicalize(params)
	if err != nil {
		return "", err
	}
	ct, err := jsontext.AppendQuote(nil, tool)
	if err != nil {
		return "", malformed("tool name is not valid UTF-8")
	}
	return payloadHash(cp, ct), nil
}

// payloadHash hashes the canonical params object and the canonical (quoted) tool
// name; both keys are ASCII, so "params" sorts before "tool" in JCS order.
func payloadHash(canonicalParams, canonicalTool []byte) string {
	h := sha256.New()
	h.Write([]byte(`{"params":`))
	h.Write(canonicalParams)
	h.Write([]byte(`,"tool":`))
	h.Write(canonicalTool)
	h.Write([]byte(`}`))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return FormatHash(sum)
}
