package protocol

import (
	"bytes"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonicalize returns the RFC 8785 (JCS) form of one JSON value as a new slice.
// It rejects what JCS cannot represent faithfully: invalid JSON, invalid UTF-8 or
// lone surrogates, duplicate member names, and numbers that are not I-JSON
// (RFC 7493: finite as an IEEE 754 double, integers that a double holds as written),
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

// checkNumbers rejects every number in the valid JSON text raw that JCS would
// change in value: overflow to the largest double, or an integer rounded to
// another. Only valid JSON may be given: the scan tracks strings by
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
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return malformed("number %.40s is out of IEEE 754 double range", v)
	}
	if !bytes.ContainsAny(v, ".eE") && !exactInteger(v, f) {
		return malformed("integer %.40s cannot be held exactly by an IEEE 754 double", v)
	}
	return nil
}

// exactInteger reports whether the integer literal v means the same number as
// the shortest decimal form of f, the double nearest to it: true for every
// integer up to 2^53 and for larger ones that a double holds as written (such as
// 100000000000000000000, or JCS's own 123456789012345680000), false when
// precision would be lost (such as 9007199254740993).
func exactInteger(v []byte, f float64) bool {
	if v[0] == '-' {
		v = v[1:]
	}
	if len(v) <= 15 {
		return true // every integer below 10^15 is exact
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64) // d.ddddde+XX
	mant, exp, _ := bytes.Cut(e, []byte("e"))
	digits := bytes.TrimRight(v, "0")
	// The mantissa's digits without the point must equal v's significant digits,
	// and the exponent must equal v's number of digits after the first.
	if len(mant) > 1 {
		if len(digits) != len(mant)-1 || digits[0] != mant[0] || !bytes.Equal(digits[1:], mant[2:]) {
			return false
		}
	} else if len(digits) != 1 || digits[0] != mant[0] {
		return false
	}
	n, err := strconv.Atoi(string(exp))
	return err == nil && n == len(v)-1
}
