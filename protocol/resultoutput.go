package protocol

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"unicode/utf8"
)

// OutputMatch says which output of a result a byte string is.
type OutputMatch int

const (
	// MatchCaptured: the bytes are the captured output (captured_hash and
	// captured_bytes in v2; the output member in v1). When the result is
	// not truncated, that is everything the tool wrote.
	MatchCaptured OutputMatch = iota + 1
	// MatchFull: the bytes are everything the tool wrote (output_hash and
	// output_bytes) of a truncated result, of which the node kept less.
	MatchFull
)

// CheckOutput reports whether b is an output the result commits to: its
// captured output, or, when truncated, the whole output the tool wrote. It
// returns an error with code output_mismatch otherwise, and malformed for a
// v1 result whose output member does not decode. The result should have been
// verified first (Verifier.VerifyResult): CheckOutput trusts its members.
func (r *Result) CheckOutput(b []byte) (OutputMatch, error) {
	sum := sha256.Sum256(b)
	if r.Version() == 1 {
		captured, err := r.CapturedOutputV1()
		if err != nil {
			return 0, err
		}
		if subtle.ConstantTimeCompare(captured, b) == 1 {
			return MatchCaptured, nil
		}
	} else if r.CapturedBytes != nil && int64(len(b)) == *r.CapturedBytes && sameHash(sum, r.CapturedHash) {
		return MatchCaptured, nil
	}
	if r.Truncated && int64(len(b)) == r.OutputBytes && sameHash(sum, r.OutputHash) {
		return MatchFull, nil
	}
	if r.Truncated {
		return 0, fail(CodeOutputMismatch, "%d bytes with hash %s are neither the captured output (%s) nor the whole output (%s)",
			len(b), FormatHash(sum), r.capturedHash(), r.OutputHash)
	}
	return 0, fail(CodeOutputMismatch, "%d bytes with hash %s are not the output (%d bytes, %s)",
		len(b), FormatHash(sum), r.OutputBytes, r.OutputHash)
}

// CheckCaptured reports whether b is exactly the captured output of a v2
// result: what a node must send beside it, and what a server stores.
func (r *Result) CheckCaptured(b []byte) error {
	if r.Version() != 2 || r.CapturedBytes == nil {
		return malformed("only a %s commits to a captured output by hash", ResultTypeV2)
	}
	if int64(len(b)) != *r.CapturedBytes || !sameHash(sha256.Sum256(b), r.CapturedHash) {
		return fail(CodeOutputMismatch, "the output sent is not the one captured_hash and captured_bytes commit to")
	}
	return nil
}

// CapturedOutputV1 returns the captured output a v1 result carries, decoded
// from base64 when output_encoding says so.
func (r *Result) CapturedOutputV1() ([]byte, error) {
	if r.OutputEncoding != "base64" {
		return []byte(r.Output), nil
	}
	b, err := strictBase64.DecodeString(r.Output)
	if err != nil {
		return nil, malformed("output is not standard base64: %v", err)
	}
	return b, nil
}

func (r *Result) capturedHash() string {
	if r.CapturedHash != "" {
		return r.CapturedHash
	}
	b, err := r.CapturedOutputV1()
	if err != nil {
		return "unreadable"
	}
	return HashBytes(b)
}

// SetCaptured fills a v2 result's output members from the hash and size of
// everything the tool wrote and the bytes the node kept. truncated is the
// tier's own report (it stopped reading); keeping fewer bytes than were
// written also makes the result truncated.
func (r *Result) SetCaptured(outputHash string, outputBytes int64, captured []byte, truncated bool) {
	n := int64(len(captured))
	r.OutputHash, r.OutputBytes = outputHash, outputBytes
	r.CapturedHash, r.CapturedBytes = HashBytes(captured), &n
	r.Truncated = truncated || n < outputBytes
}

func sameHash(sum [sha256.Size]byte, s string) bool {
	want, err := ParseHash(s)
	return err == nil && subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

// EncodeOutput writes output bytes as JSON text carries them: the text
// itself when it is UTF-8, otherwise standard base64 with encoding "base64".
func EncodeOutput(b []byte) (text, encoding string) {
	if utf8.Valid(b) {
		return string(b), ""
	}
	return base64.StdEncoding.EncodeToString(b), "base64"
}

// DecodeOutput reverses EncodeOutput.
func DecodeOutput(text, encoding string) ([]byte, error) {
	switch encoding {
	case "":
		return []byte(text), nil
	case "base64":
		b, err := strictBase64.DecodeString(text)
		if err != nil {
			return nil, malformed("output is not standard base64: %v", err)
		}
		return b, nil
	}
	return nil, malformed(`output_encoding must be "base64" when present`)
}
