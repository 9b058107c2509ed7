package ledger

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// algEd25519 is the signed-note algorithm byte for Ed25519 keys.
const algEd25519 = 1

// NewSigner returns a signed-note signer for checkpoints of the log called
// origin, using the Ed25519 private key derived from the 32-byte seed, and the
// matching note verifier key ("origin+hash+base64") that verifiers are given.
// The same seed and origin always give the same keys.
func NewSigner(origin string, seed []byte) (note.Signer, string, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, "", fmt.Errorf("%w: seed is %d bytes, want %d", ErrBadKey, len(seed), ed25519.SeedSize)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	// A verifier key is name+hash+key; the signer key repeats name and hash
	// with the seed in place of the public key.
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, "", fmt.Errorf("%w: origin %q cannot name a key", ErrBadKey, origin)
	}
	skey := "PRIVATE+KEY+" + parts[0] + "+" + parts[1] + "+" +
		base64.StdEncoding.EncodeToString(append([]byte{algEd25519}, seed...))
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	if _, err := NewVerifier(vkey); err != nil {
		return nil, "", err
	}
	return signer, vkey, nil
}

// NewVerifier parses a note verifier key, such as the one NewSigner returns or
// the ledger_key of a dev cluster.
func NewVerifier(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("%w: verifier key %q: %v", ErrBadKey, vkey, err)
	}
	return v, nil
}
