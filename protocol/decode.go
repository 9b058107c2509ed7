package protocol

import (
	"github.com/go-json-experiment/json"
)

// DefaultMaxBytes is the default limit on the size of one encoded object.
const DefaultMaxBytes = 1 << 20

// decodeStrict decodes one JSON object into v: at most limit bytes, valid UTF-8,
// no duplicate member names at any depth, no members v does not define, member
// names matched exactly (case-sensitively), and I-JSON numbers.
func decodeStrict(data []byte, limit int, v any) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if len(data) > limit {
		return malformed("object is %d bytes, over the limit of %d", len(data), limit)
	}
	if err := json.Unmarshal(data, v, json.RejectUnknownMembers(true)); err != nil {
		return malformed("%v", err)
	}
	return checkNumbers(data)
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
	if err := decodeStrict(data, limit, v); err != nil {
		return signedObject{}, err
	}
	if err := v.validate(); err != nil {
		return signedObject{}, err
	}
	return canonicalSigned(data)
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
	return canonicalSigned(b)
}
