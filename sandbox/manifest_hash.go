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
// registered — no defaults filled in, no field reinterpreted. Text that is
// not one JSON value is an error wrapping ErrInvalidManifest.
//
// The product computes this identity with protocol.Canonicalize (the control
// plane in controlplane/internal/tools, the agent in nodeagent.ManifestHash),
// which this package may not import; HashRegistered uses the same jsontext
// canonicalizer and so gives the same hash for every manifest those accept
// (protocol.Canonicalize also refuses numbers that are not I-JSON). Tests use
// it to compare a registration with the allowlist file written from it.
func HashRegistered(raw []byte) (string, error) {
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Canonicalize(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	sum := sha256.Sum256(v)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
