package protocol_test

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/writhq/writ/protocol"
)

// checkResultCanonical: VerifyResultCanonical agrees with VerifyResult, and
// the canonical form it returns is Canonicalize's, in a buffer of its own.
func checkResultCanonical(t *testing.T, raw []byte, nodes signerKeys, verifyErr error) {
	t.Helper()
	r, c, err := verifierAt(t, t0).VerifyResultCanonical(raw, nodes)
	if protocol.CodeOf(err) != protocol.CodeOf(verifyErr) {
		t.Fatalf("VerifyResultCanonical: %v, VerifyResult: %v", err, verifyErr)
	}
	if err != nil {
		if r != nil || c != nil {
			t.Fatalf("an error (%v) with a result or a canonical form", err)
		}
		return
	}
	want, err := protocol.Canonicalize(raw)
	if err != nil {
		t.Fatalf("verified, but Canonicalize fails: %v", err)
	}
	if !bytes.Equal(c, want) {
		t.Fatalf("canonical form\n%s\nwant Canonicalize's\n%s", c, want)
	}
	if len(raw) > 0 && len(c) > 0 && &c[0] == &raw[0] {
		t.Fatal("the canonical form is the caller's buffer")
	}
}

// TestResultCanonicalForm: the result as marshaled (members out of order)
// and already canonical both give its canonical form, signature included.
func TestResultCanonicalForm(t *testing.T) {
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	r := newResult()
	if err := r.Sign(nodePriv); err != nil {
		t.Fatal(err)
	}
	raw := encode(t, r)
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(raw, canon) {
		t.Fatal("the marshaled result is canonical already: the test needs one that is not")
	}
	for name, form := range map[string][]byte{"as marshaled": raw, "canonical": canon} {
		t.Run(name, func(t *testing.T) {
			checkResultCanonical(t, form, nodes, nil)
			_, c, _ := verifierAt(t, t0).VerifyResultCanonical(form, nodes)
			if !bytes.Contains(c, []byte(`"sig":"`+r.Sig+`"`)) {
				t.Fatalf("the canonical form lost the signature: %s", c)
			}
		})
	}
	bad := bytes.Replace(canon, []byte(`"status":"ok"`), []byte(`"status":"error"`), 1)
	checkResultCanonical(t, bad, nodes, &protocol.Error{Code: protocol.CodeBadSignature})
}
