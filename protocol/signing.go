package protocol

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// Kind names a kind of signed object. It selects the domain prefix of the signing
// input, so that a signature of one kind is never valid as another.
type Kind string

// The kinds of signed objects.
const (
	KindIntent   Kind = "intent"
	KindApproval Kind = "approval"
	KindDispatch Kind = "dispatch"
	KindResult   Kind = "result"
)

// Prefix returns the domain prefix "writ/v1/" + kind + "\n".
func (k Kind) Prefix() string { return "writ/v1/" + string(k) + "\n" }

// Type returns the value of the "type" member of objects of this kind.
func (k Kind) Type() string { return "writ." + string(k) + "/v1" }

// SigningInput returns "writ/v1/" + kind + "\n" + JCS(object without "sig").
// obj is the JSON text of the whole object, with or without a "sig" member.
func SigningInput(kind Kind, obj []byte) ([]byte, error) {
	so, err := canonicalSigned(obj)
	if err != nil {
		return nil, err
	}
	return so.signingInput(kind), nil
}

func (o signedObject) signingInput(kind Kind) []byte {
	p := kind.Prefix()
	in := make([]byte, 0, len(p)+len(o.body))
	return append(append(in, p...), o.body...)
}

// HMACSign returns the base64 HMAC-SHA256 of the signing input.
func HMACSign(secret, signingInput []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(signingInput)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// hmacVerify checks a base64 HMAC-SHA256 signature in constant time.
// The prefix and body are hashed in two writes so no signing input is built.
func hmacVerify(secret []byte, prefix string, body []byte, sig string) bool {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(prefix))
	m.Write(body)
	var got [sha256.Size]byte
	m.Sum(got[:0])
	// A signature of the wrong length is compared against zeros, so that it
	// costs what a wrong value of the right length costs.
	var want [base64Len32]byte
	n := 0
	if len(sig) == base64.StdEncoding.EncodedLen(sha256.Size) {
		var err error
		if n, err = strictBase64.Decode(want[:], []byte(sig)); err != nil {
			n = 0
		}
	}
	return hmac.Equal(got[:], want[:sha256.Size]) && n == sha256.Size
}

// Room for decoding base64 text of the length that encodes 32 or 64 bytes: the
// decoder may write up to DecodedLen bytes whatever the padding.
const (
	base64Len32 = 33 // base64.StdEncoding.DecodedLen(44)
	base64Len64 = 66 // base64.StdEncoding.DecodedLen(88)
)

// Ed25519Sign returns the base64 Ed25519 signature of the signing input.
func Ed25519Sign(priv ed25519.PrivateKey, signingInput []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, signingInput))
}

// ed25519Verify checks a base64 Ed25519 signature over prefix + body.
func ed25519Verify(pub ed25519.PublicKey, prefix string, body []byte, sig string) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
		return false
	}
	// Room for what 88 base64 characters can decode to, not just 64 bytes:
	// unpadded text of the right length decodes to 66.
	var s [base64Len64]byte
	if n, err := strictBase64.Decode(s[:], []byte(sig)); err != nil || n != ed25519.SignatureSize {
		return false
	}
	msg := make([]byte, 0, len(prefix)+len(body))
	msg = append(append(msg, prefix...), body...)
	return ed25519.Verify(pub, msg, s[:ed25519.SignatureSize])
}

// strictBase64 is standard padded base64 that refuses non-zero trailing bits,
// so that one value has exactly one text.
var strictBase64 = base64.StdEncoding.Strict()
