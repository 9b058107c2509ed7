package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/writhq/writ/sandbox/internal/strictjson"
)

// maxManifestBytes bounds what ParseManifest reads; a manifest is small.
const maxManifestBytes = 1 << 20

// ParseManifest reads the JSON form of a manifest strictly: unknown fields,
// duplicate keys, keys spelled in another case, trailing data and invalid
// values are all rejected with an error wrapping ErrInvalidManifest. The
// result is validated but keeps zero limits as written; tiers fill defaults.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(data) > maxManifestBytes {
		return m, fmt.Errorf("%w: larger than %d bytes", ErrInvalidManifest, maxManifestBytes)
	}
	if err := strictjson.Check(data, manifestKey); err != nil {
		return m, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// manifestKey accepts the only spelling our fields have: lower snake case.
// With DisallowUnknownFields this makes field matching exact.
func manifestKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ParseParams checks that params is one JSON object without duplicate keys
// (a tool and the argv template must not read different values for one
// name) and returns its members. Empty params mean "{}".
func ParseParams(params []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	if err := strictjson.Check(params, nil); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrParams)
	}
	return obj, nil
}
