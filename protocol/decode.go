package protocol

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxBytes is the default limit on the size of one encoded object.
const DefaultMaxBytes = 1 << 20

// decodeStrict decodes one JSON object into v: at most limit bytes, valid UTF-8,
// no duplicate member names at any depth, no members v does not define, member
// names matched exactly (case-sensitively), and I-JSON numbers. It returns the
// canonical form of data (data itself when it is canonical already) and where
// its top-level members are.
func decodeStrict(data []byte, limit int, v any) ([]byte, topLevel, error) {
	c, top, err := canonicalTop(data, limit)
	if err != nil {
		return nil, top, err
	}
	// c is canonical: names are unique and sorted, so the decoder need not check.
	if err := json.Unmarshal(c, v, json.RejectUnknownMembers(true), jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, top, malformed("%v", err)
	}
	return c, top, nil
}

// canonicalTop returns the canonical form of data and its top-level spans.
func canonicalTop(data []byte, limit int) ([]byte, topLevel, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if len(data) > limit {
		return nil, topLevel{}, malformed("object is %d bytes, over the limit of %d", len(data), limit)
	}
	// Canonical input needs only validating; names in strictly increasing order
	// have no duplicates. Anything else goes through the library's encoder.
	if top, ok := scanCanonical(data); ok && jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true)) {
		return data, top, nil
	}
	c, err := Canonicalize(data)
	if err != nil {
		return nil, topLevel{}, err
	}
	top, ok := scanCanonical(c)
	if !ok {
		// Canonical output the scanner declines (such as a non-ASCII member
		// name): find the top-level members with the decoder instead.
		if top, err = topSpans(c); err != nil {
			return nil, topLevel{}, err
		}
	}
	return c, top, nil
}

// signable is implemented by every signed object type: it knows its kind and
// checks its own structure once decoded.
type signable interface {
	kind() Kind
	validate() error
}

// decodeSigned strictly decodes a signed object, checks its structure and type,
// and returns its canonical form without "sig".
func decodeSigned(data []byte, limit int, v signable) (signedObject, error) {
	c, top, err := decodeStrict(data, limit, v)
	if err != nil {
		return signedObject{}, err
	}
	if err := v.validate(); err != nil {
		return signedObject{}, err
	}
	return withoutSig(c, top), nil
}

// checkType checks the "type" member against the kind's type string.
func checkType(k Kind, typ string) error {
	if typ != k.Type() {
		return malformed("type must be %q", k.Type())
	}
	return nil
}

// marshalSigned encodes v without its signature, in canonical form, for signing.
func marshalSigned(v signable) (signedObject, error) {
	if err := v.validate(); err != nil {
		return signedObject{}, err
	}
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return signedObject{}, malformed("%v", err)
	}
	c, top, err := canonicalTop(b, len(b))
	if err != nil {
		return signedObject{}, err
	}
	return withoutSig(c, top), nil
}
