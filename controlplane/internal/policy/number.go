package policy

import (
	"math"
	"strconv"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/go-json-experiment/json/jsontext"
)

// number maps one JSON number literal onto a Cedar value by its value as an
// IEEE 754 double, which is how RFC 8785 (and so the intent's payload hash)
// reads it; 1000, 1000.0 and 1e3 therefore map alike. In order:
//
//   - an integral value in [-2^63, 2^63) becomes a Long;
//   - a value whose shortest decimal form has at most four fractional digits
//     and fits Cedar's decimal range becomes a decimal;
//   - anything else becomes the String of its RFC 8785 form (such as
//     "1.23456" or "1e+300"), so that a comparison on it is a type error,
//     which denies, rather than a missing attribute, which a `has` guard could
//     step around.
//
// A literal outside the double range is ErrNumber; protocol.Canonicalize
// refuses such intents before they get here.
func number(lit string) (cedar.Value, error) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, ErrNumber
	}
	// -2^63 and 2^63 are exact doubles; every integral double in between
	// converts to int64 without loss.
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return cedar.Long(int64(f)), nil
	}
	if math.Abs(f) < 1e15 { // beyond the decimal range; also keeps 'f' short
		// ParseDecimal refuses more than four fractional digits and
		// values out of its range.
		if d, err := types.ParseDecimal(strconv.FormatFloat(f, 'f', -1, 64)); err == nil {
			return d, nil
		}
	}
	return cedar.String(canonicalNumber(lit)), nil
}

// canonicalNumber is the RFC 8785 spelling of a valid JSON number literal.
func canonicalNumber(lit string) string {
	v := jsontext.Value(lit)
	if err := v.Canonicalize(); err != nil {
		return lit // unreachable for a literal that ParseFloat accepted
	}
	return string(v)
}
