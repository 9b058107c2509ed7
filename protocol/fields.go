package protocol

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Field limits. Identifiers name things in storage keys, logs and URLs, so they
// are kept to a small charset; free-form names only exclude control characters.
const (
	MaxIDLen             = 128
	MaxNameLen           = 256
	MaxIdempotencyKeyLen = 256
	MinNonceBytes        = 16
	maxNonceLen          = 256
)

// validID reports whether s is 1-128 characters of [A-Za-z0-9._:-].
func validID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// validName reports whether s is 1 to max characters with no control characters.
func validName(s string, max int) bool {
	if s == "" || utf8.RuneCountInString(s) > max {
		return false
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// checkID, checkName: field checks that produce a malformed error naming the field.
func checkID(field, s string) error {
	if !validID(s) {
		return malformed("%s must be 1-%d characters of [A-Za-z0-9._:-]", field, MaxIDLen)
	}
	return nil
}

func checkName(field, s string) error {
	if !validName(s, MaxNameLen) {
		return malformed("%s must be 1-%d characters without control characters", field, MaxNameLen)
	}
	return nil
}

func checkHash(field, s string) error {
	if !validHash(s) {
		return malformed("%s must be sha256: followed by 64 lowercase hex digits", field)
	}
	return nil
}

// checkNonce requires standard padded base64 of at least 16 bytes, the protocol's
// encoding of binary values.
func checkNonce(s string) error {
	if len(s) > maxNonceLen {
		return malformed("nonce is longer than %d characters", maxNonceLen)
	}
	n, err := strictBase64.DecodeString(s)
	if err != nil || len(n) < MinNonceBytes {
		return malformed("nonce must be standard base64 of at least %d random bytes", MinNonceBytes)
	}
	return nil
}

// ParseTime parses a protocol timestamp: RFC 3339 in UTC with "Z", fractional
// seconds allowed.
func ParseTime(s string) (time.Time, error) {
	// Go's parser also takes a comma before the fraction, which RFC 3339 does not.
	if len(s) < len("2006-01-02T15:04:05Z") || len(s) > len(time.RFC3339Nano) || s[len(s)-1] != 'Z' || strings.IndexByte(s, ',') >= 0 {
		return time.Time{}, malformed("time %.40q is not RFC 3339 in UTC with Z", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, malformed("time %.40q is not RFC 3339 in UTC with Z", s)
	}
	return t, nil
}

// FormatTime writes t as a protocol timestamp, in UTC, trailing zeros dropped.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// checkTimes parses issued_at and expires_at and requires expiry after issue.
func checkTimes(issuedAt, expiresAt string) (issued, expires time.Time, err error) {
	if issued, err = ParseTime(issuedAt); err != nil {
		return issued, expires, malformed("issued_at: %s", err.(*Error).Message)
	}
	if expires, err = ParseTime(expiresAt); err != nil {
		return issued, expires, malformed("expires_at: %s", err.(*Error).Message)
	}
	if !expires.After(issued) {
		return issued, expires, malformed("expires_at must be after issued_at")
	}
	return issued, expires, nil
}
