package protocol

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonicalize returns the RFC 8785 (JCS) form of one JSON value as a new slice.
// It rejects what JCS cannot represent faithfully: invalid JSON, invalid UTF-8 or
// lone surrogates, duplicate member names, and numbers that are not I-JSON
// (RFC 7493: finite as an IEEE 754 double, integers exact within ±(2^53−1)),
// so that no two different inputs are silently given one canonical form.
//
// The encoder is jsontext's canonicalizer (the prototype of encoding/json/v2);
// tests check it against github.com/gowebpki/jcs as an independent reference.
func Canonicalize(raw []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return nil, malformed("not canonicalizable JSON: %v", err)
	}
	// raw is valid JSON now, which is what checkNumbers needs.
	if err := checkNumbers(raw); err != nil {
		return nil, err
	}
	return v, nil
}

// maxExactInt is the largest integer every IEEE 754 double holds exactly.
const maxExactInt = 1<<53 - 1

// checkNumbers rejects every number in the valid JSON text raw that JCS would
// change in value: overflow to the largest double, or an integer beyond 2^53−1
// rounded to another. Only valid JSON may be given: the scan tracks strings by
// their quotes and escapes, which is exact for valid JSON and nothing else.
func checkNumbers(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++ // the escaped byte; \uXXXX digits are never '"' or '\\'
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if err := checkNumber(raw[i:j]); err != nil {
				return err
			}
			i = j - 1
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func checkNumber(v []byte) error {
	if bytes.IndexAny(v, ".eE") < 0 {
		digits := v
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) > 16 {
			return malformed("integer %s is not exact in IEEE 754 (|n| must be at most 2^53-1)", v)
		}
		n, err := strconv.ParseUint(string(digits), 10, 64)
		if err != nil || n > maxExactInt {
			return malformed("integer %s is not exact in IEEE 754 (|n| must be at most 2^53-1)", v)
		}
		return nil
	}
	if _, err := strconv.ParseFloat(string(v), 64); err != nil {
		return malformed("number %s is out of IEEE 754 double range", v)
	}
	return nil
}
