package protocol_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

func newApproval(in *protocol.Intent, mod ...func(*protocol.Approval)) *protocol.Approval {
	a := &protocol.Approval{
		Type: "writ.approval/v1", ID: "apr-1", IntentID: in.ID, PayloadHash: in.PayloadHash,
		Tenant: in.Tenant, Approver: "alice", Decision: protocol.DecisionApprove,
		Nonce: "AAECAwQFBgcICQoLDA0ODw==", IssuedAt: protocol.FormatTime(t0.Add(time.Minute)),
		ExpiresAt: protocol.FormatTime(t0.Add(8 * time.Minute)), KeyID: "alice-key",
	}
	for _, m := range mod {
		m(a)
	}
	return a
}

type policyFunc func(*protocol.Intent, *protocol.Approval) bool

func (f policyFunc) MayApprove(in *protocol.Intent, a *protocol.Approval) bool { return f(in, a) }

func TestApprovalChecks(t *testing.T) {
	t.Parallel()
	in := newIntent()
	signedIntent(t, in)
	keys := approverKeys{
		"alice-key": {Public: alicePriv.Public().(ed25519.PublicKey), Approver: "alice"},
		"loose-key": {Public: alicePriv.Public().(ed25519.PublicKey)},
	}
	onlyAlice := policyFunc(func(_ *protocol.Intent, a *protocol.Approval) bool { return a.Approver == "alice" })
	v := verifierAt(t, t0.Add(2*time.Minute))
	for _, c := range []struct {
		name   string
		mod    func(*protocol.Approval)
		priv   ed25519.PrivateKey
		nonces nonceSet
		want   protocol.Code
	}{
		{"valid", nil, alicePriv, nil, ""},
		{"key bound to another approver", func(a *protocol.Approval) { a.Approver = "bob" }, alicePriv, nil, protocol.CodeApprovalInvalid},
		{"unknown key", func(a *protocol.Approval) { a.KeyID = "nobody" }, alicePriv, nil, protocol.CodeApprovalInvalid},
		{"signed by another key", nil, nodePriv, nil, protocol.CodeApprovalInvalid},
		{"mismatch beats expiry", func(a *protocol.Approval) {
			a.Tenant = "globex"
			a.ExpiresAt = protocol.FormatTime(t0.Add(90 * time.Second))
		}, alicePriv, nil, protocol.CodeApprovalMismatch},
		{"expired", func(a *protocol.Approval) { a.ExpiresAt = protocol.FormatTime(t0.Add(2 * time.Minute)) }, alicePriv, nil, protocol.CodeApprovalExpired},
		{"issued in the future", func(a *protocol.Approval) {
			a.IssuedAt = protocol.FormatTime(t0.Add(5 * time.Minute))
		}, alicePriv, nil, protocol.CodeApprovalExpired},
		{"replayed beats forbidden", func(a *protocol.Approval) { a.Approver, a.KeyID = "support-bot", "loose-key" }, alicePriv,
			nonceSet{"AAECAwQFBgcICQoLDA0ODw==": true}, protocol.CodeApprovalReplayed},
		{"self-approval", func(a *protocol.Approval) { a.Approver, a.KeyID = "support-bot", "loose-key" }, alicePriv, nil, protocol.CodeApprovalForbidden},
		{"policy refuses", func(a *protocol.Approval) { a.Approver, a.KeyID = "mallory", "loose-key" }, alicePriv, nil, protocol.CodeApprovalForbidden},
		{"valid for longer than the maximum TTL", func(a *protocol.Approval) {
			a.ExpiresAt = protocol.FormatTime(t0.Add(time.Minute + 16*time.Minute))
		}, alicePriv, nil, protocol.CodeApprovalExpired},
		{"far-future expiry", func(a *protocol.Approval) { a.ExpiresAt = "9999-12-31T23:59:59Z" }, alicePriv, nil, protocol.CodeApprovalExpired},
		{"short nonce", func(a *protocol.Approval) { a.Nonce = "AAECAwQFBgcICQoLDA0O" }, alicePriv, nil, protocol.CodeMalformed},
		{"bad decision", func(a *protocol.Approval) { a.Decision = "maybe" }, alicePriv, nil, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newApproval(in)
			if c.mod != nil {
				c.mod(a)
			}
			// Sign without validation so that malformed artifacts can be built too.
			input, err := protocol.SigningInput(protocol.KindApproval, encode(t, a))
			if err != nil {
				t.Fatal(err)
			}
			a.Sig = protocol.Ed25519Sign(c.priv, input)
			_, err = v.VerifyApproval(encode(t, a), in, keys, c.nonces, onlyAlice)
			wantCode(t, err, c.want)
		})
	}
	signed := newApproval(in)
	if err := signed.Sign(alicePriv); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyApproval(encode(t, signed), nil, keys, nil, nil); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Errorf("no intent: got %v, want malformed", err)
	}
}

func TestApprovalSignRoundTrip(t *testing.T) {
	t.Parallel()
	in := newIntent()
	signedIntent(t, in)
	a := newApproval(in)
	if err := a.Sign(alicePriv); err != nil {
		t.Fatal(err)
	}
	keys := approverKeys{"alice-key": {Public: alicePriv.Public().(ed25519.PublicKey), Approver: "alice"}}
	got, err := verifierAt(t, t0.Add(2*time.Minute)).VerifyApproval(encode(t, a), in, keys, nil, nil)
	if err != nil {
		t.Fatalf("VerifyApproval: %v", err)
	}
	if got.Decision != protocol.DecisionApprove || got.Sig != a.Sig {
		t.Errorf("got %+v", got)
	}
	if err := a.Sign(ed25519.PrivateKey{1, 2, 3}); err == nil {
		t.Error("signing with a short private key succeeded")
	}
}
