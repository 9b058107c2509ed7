package protocol_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/protocol/protocoltest"
)

// Key lookups backed by maps, as the vectors give keys.
type hmacKeys map[string][]byte

func (k hmacKeys) IntentKey(_, id string) ([]byte, bool) { s, ok := k[id]; return s, ok }

type approverKeys map[string]protocol.ApproverKey

func (k approverKeys) ApproverKey(_, id string) (protocol.ApproverKey, bool) {
	a, ok := k[id]
	return a, ok
}

type signerKeys map[string]ed25519.PublicKey

func (k signerKeys) SignerKey(id string) (ed25519.PublicKey, bool) { p, ok := k[id]; return p, ok }

type nonceSet map[string]bool

func (n nonceSet) Consumed(s string) bool { return n[s] }

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("vector base64 %q: %v", s, err)
	}
	return b
}

func at(t *testing.T, s string) func() time.Time {
	t.Helper()
	now, err := protocol.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return func() time.Time { return now }
}

func TestVectorsPayloadHash(t *testing.T) {
	t.Parallel()
	var v protocoltest.PayloadHashVectors
	protocoltest.Load(t, "payload_hash.json", &v)
	if len(v.Cases) == 0 {
		t.Fatal("no payload hash vectors")
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := protocol.PayloadHash(c.Tool, []byte(c.ParamsJSON))
			if err != nil {
				t.Fatalf("PayloadHash: %v", err)
			}
			if got != c.PayloadHash {
				t.Errorf("payload hash: got %s, want %s", got, c.PayloadHash)
			}
			obj := `{"tool":` + mustJSON(t, c.Tool) + `,"params":` + c.ParamsJSON + `}`
			canon, err := protocol.Canonicalize([]byte(obj))
			if err != nil {
				t.Fatal(err)
			}
			if string(canon) != c.Canonical {
				t.Errorf("canonical: got %s, want %s", canon, c.Canonical)
			}
			if h := protocol.HashBytes(canon); h != c.PayloadHash {
				t.Errorf("hash of canonical: got %s, want %s", h, c.PayloadHash)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVectorsIntent(t *testing.T) {
	t.Parallel()
	var v protocoltest.IntentVectors
	protocoltest.Load(t, "intent.json", &v)
	keys := hmacKeys{}
	for id, s := range v.Keys {
		keys[id] = b64(t, s)
	}
	cfg := protocol.DefaultConfig()
	cfg.MaxTTL = time.Duration(v.MaxTTLSeconds) * time.Second
	cfg.Skew = time.Duration(v.SkewSeconds) * time.Second
	cfg.Now = at(t, v.Now)
	ver, err := protocol.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no intent vectors")
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := ver.VerifyIntent([]byte(c.IntentJSON), keys)
			if got := string(protocol.CodeOf(err)); got != c.Error {
				t.Fatalf("verify: got code %q (%v), want %q", got, err, c.Error)
			}
			if c.Valid != (err == nil) {
				t.Fatalf("verify: got valid=%v, want %v", err == nil, c.Valid)
			}
			if c.SigningInput != "" && protocol.CodeOf(err) != protocol.CodeMalformed {
				got, err := protocol.SigningInput(protocol.KindIntent, []byte(c.IntentJSON))
				if err != nil {
					t.Fatalf("SigningInput: %v", err)
				}
				if string(got) != c.SigningInput {
					t.Errorf("signing input:\n got %q\nwant %q", got, c.SigningInput)
				}
			}
			if !c.Valid {
				return
			}
			// Signing the decoded intent again gives the vector's signature.
			want := in.Sig
			if err := in.Sign(keys[in.KeyID]); err != nil {
				t.Fatal(err)
			}
			if in.Sig != want {
				t.Errorf("re-signed: got %s, want %s", in.Sig, want)
			}
		})
	}
}

func TestVectorsApproval(t *testing.T) {
	t.Parallel()
	var v protocoltest.ApprovalVectors
	protocoltest.Load(t, "approval.json", &v)
	keys := approverKeys{}
	privs := map[string]ed25519.PrivateKey{}
	for id, k := range v.ApproverKeys {
		priv := ed25519.NewKeyFromSeed(b64(t, k.Seed))
		if got := base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)); got != k.Public {
			t.Fatalf("key %s: public from seed %s, vector says %s", id, got, k.Public)
		}
		keys[id] = protocol.ApproverKey{Public: b64(t, k.Public)}
		privs[id] = priv
	}
	nonces := nonceSet{}
	for _, n := range v.ConsumedNonces {
		nonces[n] = true
	}
	intent, err := protocol.DecodeIntent([]byte(v.IntentJSON), 0)
	if err != nil {
		t.Fatalf("approval vectors' intent: %v", err)
	}
	cfg := protocol.DefaultConfig()
	cfg.Now = at(t, v.Now)
	ver, err := protocol.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no approval vectors")
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			a, err := ver.VerifyApproval([]byte(c.ApprovalJSON), intent, keys, nonces, nil)
			if got := string(protocol.CodeOf(err)); got != c.Error {
				t.Fatalf("verify: got code %q (%v), want %q", got, err, c.Error)
			}
			if c.Valid != (err == nil) {
				t.Fatalf("verify: got valid=%v, want %v", err == nil, c.Valid)
			}
			if c.SigningInput != "" {
				got, err := protocol.SigningInput(protocol.KindApproval, []byte(c.ApprovalJSON))
				if err != nil {
					t.Fatalf("SigningInput: %v", err)
				}
				if string(got) != c.SigningInput {
					t.Errorf("signing input:\n got %q\nwant %q", got, c.SigningInput)
				}
			}
			if !c.Valid {
				return
			}
			if a.Decision != c.Decision {
				t.Errorf("decision: got %q, want %q", a.Decision, c.Decision)
			}
			want := a.Sig
			if err := a.Sign(privs[a.KeyID]); err != nil {
				t.Fatal(err)
			}
			if a.Sig != want {
				t.Errorf("re-signed: got %s, want %s", a.Sig, want)
			}
		})
	}
}

func TestVectorsDispatchResult(t *testing.T) {
	t.Parallel()
	var v protocoltest.DispatchResultVectors
	protocoltest.Load(t, "dispatch_result.json", &v)
	servers := signerKeys{v.ServerKey.KeyID: b64(t, v.ServerKey.Public)}
	nodes := signerKeys{v.NodeKey.KeyID: b64(t, v.NodeKey.Public)}
	seeds := map[string][]byte{v.ServerKey.KeyID: b64(t, v.ServerKey.Seed), v.NodeKey.KeyID: b64(t, v.NodeKey.Seed)}
	if len(v.Cases) == 0 {
		t.Fatal("no dispatch/result vectors")
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var kind protocol.Kind
			var err error
			var resign func() (got, want string)
			switch c.Kind {
			case "dispatch":
				kind = protocol.KindDispatch
				var d *protocol.Dispatch
				if d, err = protocol.DecodeDispatch([]byte(c.JSON), 0); err != nil {
					t.Fatalf("decode: %v", err)
				}
				cfg := protocol.DefaultConfig()
				cfg.Now = at(t, d.IssuedAt)
				ver, _ := protocol.NewVerifier(cfg)
				d, err = ver.VerifyDispatch([]byte(c.JSON), d.Node, servers)
				resign = func() (string, string) {
					want := d.Sig
					if err := d.Sign(ed25519.NewKeyFromSeed(seeds[d.KeyID])); err != nil {
						t.Fatal(err)
					}
					return d.Sig, want
				}
			case "result":
				kind = protocol.KindResult
				ver, _ := protocol.NewVerifier(protocol.DefaultConfig())
				var r *protocol.Result
				r, err = ver.VerifyResult([]byte(c.JSON), nodes)
				resign = func() (string, string) {
					want := r.Sig
					if err := r.Sign(ed25519.NewKeyFromSeed(seeds[r.KeyID])); err != nil {
						t.Fatal(err)
					}
					return r.Sig, want
				}
			default:
				t.Fatalf("unknown vector kind %q", c.Kind)
			}
			if c.Valid != (err == nil) {
				t.Fatalf("verify: got err=%v, want valid=%v", err, c.Valid)
			}
			if !c.Valid {
				if protocol.CodeOf(err) != protocol.CodeBadSignature {
					t.Errorf("invalid vector: got %v, want bad_signature", err)
				}
				return
			}
			if c.SigningInput != "" {
				got, err := protocol.SigningInput(kind, []byte(c.JSON))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != c.SigningInput {
					t.Errorf("signing input:\n got %q\nwant %q", got, c.SigningInput)
				}
			}
			if got, want := resign(); got != want {
				t.Errorf("re-signed: got %s, want %s", got, want)
			}
		})
	}
}
