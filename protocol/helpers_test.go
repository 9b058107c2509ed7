package protocol_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

var (
	t0         = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	testSecret = []byte("an orchestrator secret of 32 b..")
	serverPriv = ed25519.NewKeyFromSeed(make([]byte, 32))
	nodePriv   = ed25519.NewKeyFromSeed([]byte("node-seed-0123456789abcdef012345"))
	alicePriv  = ed25519.NewKeyFromSeed([]byte("alice-seed-0123456789abcdef01234"))
)

func verifierAt(t testing.TB, now time.Time) *protocol.Verifier {
	t.Helper()
	cfg := protocol.DefaultConfig()
	cfg.Now = func() time.Time { return now }
	v, err := protocol.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newIntent(mod ...func(*protocol.Intent)) *protocol.Intent {
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: "int-1", Tenant: "acme", Principal: "support-bot",
		RunID: "run-1", Tool: "echo", Params: jsontext.Value(`{"msg":"hi"}`),
		IdempotencyKey: "idem-1", IssuedAt: protocol.FormatTime(t0),
		ExpiresAt: protocol.FormatTime(t0.Add(10 * time.Minute)), KeyID: "orch-1",
	}
	for _, m := range mod {
		m(in)
	}
	return in
}

// signedJSON fills the payload hash, signs and encodes an intent.
func signedIntent(t testing.TB, in *protocol.Intent) []byte {
	t.Helper()
	if err := in.SetPayloadHash(); err != nil {
		t.Fatal(err)
	}
	if err := in.Sign(testSecret); err != nil {
		t.Fatal(err)
	}
	return encode(t, in)
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tenantKeys holds keys bound to one tenant each.
type tenantKeys map[[2]string][]byte

func (k tenantKeys) IntentKey(tenant, id string) ([]byte, bool) {
	s, ok := k[[2]string{tenant, id}]
	return s, ok
}

var testKeys = tenantKeys{{"acme", "orch-1"}: testSecret}

func wantCode(t *testing.T, err error, want protocol.Code) {
	t.Helper()
	if got := protocol.CodeOf(err); got != want {
		t.Fatalf("got code %q (%v), want %q", got, err, want)
	}
}
