package protocol

import (
	"bytes"
	"crypto/ed25519"

	"github.com/go-json-experiment/json/jsontext"
)

// SignCanonical signs the dispatch (as Sign) and returns its canonical JSON,
// signature included: the bytes Canonicalize would make of it, built from the
// canonical form signing already made, without encoding the dispatch again.
func (d *Dispatch) SignCanonical(priv ed25519.PrivateKey) ([]byte, error) {
	d.Sig = ""
	sig, b, err := signCanonical(d, priv)
	d.Sig = sig
	return b, err
}

// SignCanonical signs the result (as Sign) and returns its canonical JSON,
// signature included, as Dispatch.SignCanonical does: a node sends these
// bytes, which a server's verification then takes as they are instead of
// canonicalizing them again.
func (r *Result) SignCanonical(priv ed25519.PrivateKey) ([]byte, error) {
	r.Sig = ""
	sig, b, err := signCanonical(r, priv)
	r.Sig = sig
	return b, err
}

// signCanonical signs v, whose sig is empty, as signEd25519 does, and
// returns the signature and v's canonical JSON with it.
func signCanonical(v signable, priv ed25519.PrivateKey) (string, []byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", nil, malformed("Ed25519 private key must be %d bytes", ed25519.PrivateKeySize)
	}
	so, err := marshalSigned(v)
	if err != nil {
		return "", nil, err
	}
	sig := Ed25519Sign(priv, so.signingInput(v.kind()))
	b, err := withSigMember(so.body, sig)
	return sig, b, err
}

// withSigMember returns the canonical object body, which has no "sig"
// member, with "sig":sig inserted where RFC 8785 orders it. sig is base64,
// which JSON writes as it is. Names are compared as bytes: against the ASCII
// "sig" that is the order of UTF-16 code units too.
func withSigMember(body []byte, sig string) ([]byte, error) {
	member := make([]byte, 0, len(sig)+9)
	member = append(append(append(member, `"sig":"`...), sig...), '"')
	dec := decoderPool.Get().(*jsontext.Decoder)
	defer decoderPool.Put(dec)
	// body is canonical: its names are unique and its UTF-8 valid.
	dec.Reset(bytes.NewReader(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	defer dec.Reset(emptyReader)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, malformed("a signed object must be a JSON object")
	}
	at, empty := int(dec.InputOffset()), true // where the next member's name starts
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue() // the name as written, quotes included
		if err != nil {
			return nil, malformed("%v", err)
		}
		// Compared as written: an escape in a canonical name stands for a
		// byte below 0x60, as the backslash is, so against "sig" the order
		// is the same as the unescaped name's.
		if c := bytes.Compare(name[1:len(name)-1], sigName); c >= 0 {
			if c == 0 {
				return nil, malformed("the object is signed already")
			}
			return insert(body, at, member, ","), nil // before the first name after "sig"
		}
		if err := dec.SkipValue(); err != nil {
			return nil, malformed("%v", err)
		}
		at, empty = int(dec.InputOffset())+1, false // past the comma
	}
	if empty {
		return insert(body, len(body)-1, member, ""), nil
	}
	return insert(body, len(body)-1, append([]byte{','}, member...), ""), nil // last
}

var sigName = []byte("sig")

// insert returns body with member and then after inserted at body[at].
func insert(body []byte, at int, member []byte, after string) []byte {
	out := make([]byte, 0, len(body)+len(member)+len(after))
	out = append(append(append(out, body[:at]...), member...), after...)
	return append(out, body[at:]...)
}
