package sandbox

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// maxManifestBytes bounds what ParseManifest reads; a manifest is small.
const maxManifestBytes = 1 << 20

// maxParamsDepth bounds how deeply params may nest.
const maxParamsDepth = 64

// ParseManifest reads the JSON form of a manifest strictly: unknown fields,
// duplicate keys, keys spelled in another case, trailing data and invalid
// values are all rejected with an error wrapping ErrInvalidManifest. The
// result is validated but keeps zero limits as written; tiers fill defaults.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	if len(data) > maxManifestBytes {
		return m, fmt.Errorf("%w: larger than %d bytes", ErrInvalidManifest, maxManifestBytes)
	}
	// The library's defaults refuse duplicate names at any depth, trailing
	// data and invalid UTF-8, and match member names case-sensitively; every
	// field is spelled in lower snake case, so any other spelling is unknown.
	if err := json.Unmarshal(data, &m, json.RejectUnknownMembers(true)); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// ParseParams checks that params is one JSON object without duplicate keys
// at any depth (a tool and the argv template must not read different values
// for one name), nested at most 64 deep, and returns its members. Empty
// params mean "{}".
func ParseParams(params []byte) (map[string]jsontext.Value, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return map[string]jsontext.Value{}, nil
	}
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(params, &obj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrParams)
	}
	if depth(params) > maxParamsDepth {
		return nil, fmt.Errorf("%w: JSON nested too deeply", ErrParams)
	}
	return obj, nil
}

// depth returns how deeply the valid JSON value data nests.
func depth(data []byte) int {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	most := 0
	for {
		if _, err := dec.ReadToken(); err != nil {
			return most
		}
		most = max(most, dec.StackDepth())
	}
}
