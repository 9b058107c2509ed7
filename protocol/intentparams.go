package protocol

import "github.com/go-json-experiment/json/jsontext"

// IntentParams returns the canonical params of an intent already admitted
// and stored in its canonical form, without decoding the rest of it: the
// path of a server that signs a dispatch of a stored intent. The bytes are
// those DecodeIntent gives as Params for the same input. It checks only that
// raw is one JSON object with a top-level params member (malformed
// otherwise), not the rest of the intent: what it is given MUST be an intent
// that was verified before.
func IntentParams(raw []byte) (jsontext.Value, error) {
	c, top, err := canonicalTop(raw, 0)
	if err != nil {
		return nil, err
	}
	if len(c) == 0 || c[0] != '{' || top.params.start < 0 || top.params.end <= top.params.start {
		return nil, malformed("an intent needs params")
	}
	return jsontext.Value(c[top.params.start:top.params.end]), nil
}
