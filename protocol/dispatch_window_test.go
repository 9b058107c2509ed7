package protocol_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// TestCheckDispatchWindow: a dispatch verified at one time is judged again,
// by its validity window alone, at a later one: valid inside it, expired
// past it, and a TTL over the verifier's maximum is refused whenever.
func TestCheckDispatchWindow(t *testing.T) {
	t.Parallel()
	servers := signerKeys{"server-1": serverPriv.Public().(ed25519.PublicKey)}
	d, err := verifierAt(t, t0.Add(10*time.Second)).VerifyDispatch(signDispatch(t, newDispatch(), serverPriv), "node-1", servers)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		d    *protocol.Dispatch
		at   time.Time
		want protocol.Code
	}{
		{"still valid", d, t0.Add(59 * time.Second), ""},
		{"expired while it waited", d, t0.Add(time.Minute), protocol.CodeExpired},
		{"long expired", d, t0.Add(time.Hour), protocol.CodeExpired},
		{"not yet valid", d, t0.Add(-time.Hour), protocol.CodeNotYetValid},
		{"ttl too long", newDispatch(func(d *protocol.Dispatch) { d.ExpiresAt = protocol.FormatTime(t0.Add(24 * time.Hour)) }), t0, protocol.CodeTTLTooLong},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, verifierAt(t, c.at).CheckDispatchWindow(c.d), c.want)
		})
	}
}
