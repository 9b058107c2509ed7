package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// HashRegistered returns the identity of a manifest as the control plane
// registers it and as dispatches name it (tool_manifest_hash): "sha256:"+hex
// of the RFC 8785 canonical form of the manifest's JSON text exactly as
// registered — no defaults filled in, no field reinterpreted. It uses the
// same canonicalizer as the protocol package, so the two agree byte for
// byte. Text that is not one JSON value is an error wrapping
// ErrInvalidManifest.
//
// An agent keeps the registered text of each allowlisted tool, compares
// this hash with the dispatch's, and only then parses the text with
// ParseManifest to run it.
func HashRegistered(raw []byte) (string, error) {
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	sum := sha256.Sum256(v)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
