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
	if err := checkNumbers(raw); err != nil {
		return nil, err
	}
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return nil, malformed("not canonicalizable JSON: %v", err)
	}
	return v, nil
}

// maxExactInt is the largest integer every IEEE 754 double holds exactly.
const maxExactInt = 1<<53 - 1

// checkNumbers walks raw and rejects every number JCS would change in value:
// overflow to the largest double, or an integer beyond 2^53−1 rounded to another.
// It also rejects syntax errors and duplicate names, so that it is safe to call
// on untrusted input before anything else.
func checkNumbers(raw []byte) error {
	d := decoderPool.Get().(*jsontext.Decoder)
	defer decoderPool.Put(d)
	d.Reset(bytes.NewReader(raw))
	defer d.Reset(emptyReader)
	for {
		switch d.PeekKind() {
		case '0':
			v, err := d.ReadValue()
			if err != nil {
				return malformed("invalid JSON: %v", err)
			}
			if err := checkNumber(v); err != nil {
				return err
			}
		case '"':
			if _, err := d.ReadValue(); err != nil {
				return malformed("invalid JSON: %v", err)
			}
		case 0:
			// End of input or a syntax error: ReadToken tells which.
			if _, err := d.ReadToken(); err != nil {
				if err == errEOF {
					return nil
				}
				return malformed("invalid JSON: %v", err)
			}
		default:
			if _, err := d.ReadToken(); err != nil {
				return malformed("invalid JSON: %v", err)
			}
		}
	}
}

func checkNumber(v []byte) error {
	integer := bytes.IndexAny(v, ".eE") < 0
	if integer {
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
