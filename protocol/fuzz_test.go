package protocol_test

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/protocol/protocoltest"
)

// Seeds for the fuzzers come from the shared vectors, so that every fuzzer
// starts from valid and from each kind of invalid object.
func intentSeeds(f *testing.F) {
	var v protocoltest.IntentVectors
	protocoltest.Load(f, "intent.json", &v)
	for _, c := range v.Cases {
		f.Add([]byte(c.IntentJSON))
	}
}

// FuzzVerifyIntent: verification never panics, reports only protocol codes,
// and whatever decodes, once re-signed, verifies (decode and sign agree).
func FuzzVerifyIntent(f *testing.F) {
	intentSeeds(f)
	// An intent whose params have member names outside printable ASCII.
	f.Add([]byte(`{"expires_at":"2026-11-22T10:10:00Z","id":"int-1","idempotency_key":"k","issued_at":"2026-11-22T10:00:00Z","key_id":"orch-1","params":{"naïve":{"ключ":"\n"}},"payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","principal":"p","run_id":"r","sig":"AAAA","tenant":"acme","tool":"echo","type":"writ.intent/v1"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v := verifierAt(t, t0)
		_, err := v.VerifyIntent(raw, hmacKeys{"orch-1": testSecret})
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
		in, err := protocol.DecodeIntent(raw, 0)
		if err != nil {
			return
		}
		if err := in.SetPayloadHash(); err != nil {
			t.Fatalf("decoded intent has no payload hash: %v", err)
		}
		if err := in.Sign(testSecret); err != nil {
			t.Fatalf("decoded intent does not sign: %v", err)
		}
		issued, _ := protocol.ParseTime(in.IssuedAt)
		_, err = verifierAt(t, issued).VerifyIntent(encode(t, in), hmacKeys{in.KeyID: testSecret})
		switch protocol.CodeOf(err) {
		case "", protocol.CodeTTLTooLong:
		default:
			t.Fatalf("re-signed intent does not verify: %v\n%s", err, encode(t, in))
		}
	})
}

func FuzzVerifyApproval(f *testing.F) {
	var v protocoltest.ApprovalVectors
	protocoltest.Load(f, "approval.json", &v)
	for _, c := range v.Cases {
		f.Add([]byte(c.ApprovalJSON))
	}
	intent, err := protocol.DecodeIntent([]byte(v.IntentJSON), 0)
	if err != nil {
		f.Fatal(err)
	}
	keys := approverKeys{"approver-1": {Public: alicePriv.Public().(ed25519.PublicKey)}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		now, _ := protocol.ParseTime(v.Now)
		_, err := verifierAt(t, now).VerifyApproval(raw, intent, keys, nonceSet{}, nil)
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
		a, err := protocol.DecodeApproval(raw, 0)
		if err != nil {
			return
		}
		if err := a.Sign(alicePriv); err != nil {
			t.Fatalf("decoded approval does not sign: %v", err)
		}
		a.KeyID = "approver-1"
		_ = a.Sign(alicePriv)
		issued, _ := protocol.ParseTime(a.IssuedAt)
		_, err = verifierAt(t, issued).VerifyApproval(encode(t, a), intent, keys, nil, nil)
		switch protocol.CodeOf(err) {
		case "", protocol.CodeApprovalMismatch, protocol.CodeApprovalForbidden:
		default:
			t.Fatalf("re-signed approval: %v", err)
		}
	})
}

func dispatchResultSeeds(f *testing.F, kind string) {
	var v protocoltest.DispatchResultVectors
	protocoltest.Load(f, "dispatch_result.json", &v)
	for _, c := range v.Cases {
		if c.Kind == kind {
			f.Add([]byte(c.JSON))
		}
	}
}

func FuzzVerifyDispatch(f *testing.F) {
	dispatchResultSeeds(f, "dispatch")
	servers := signerKeys{"server-1": serverPriv.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := verifierAt(t, t0).VerifyDispatch(raw, "node-eu-1", servers)
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
		d, err := protocol.DecodeDispatch(raw, 0)
		if err != nil {
			return
		}
		d.KeyID = "server-1"
		d.PayloadHash, _ = protocol.PayloadHash(d.Tool, d.Params)
		if err := d.Sign(serverPriv); err != nil {
			t.Fatalf("decoded dispatch does not sign: %v", err)
		}
		issued, _ := protocol.ParseTime(d.IssuedAt)
		_, err = verifierAt(t, issued).VerifyDispatch(encode(t, d), d.Node, servers)
		switch protocol.CodeOf(err) {
		case "", protocol.CodeTTLTooLong:
		default:
			t.Fatalf("re-signed dispatch: %v", err)
		}
	})
}

func FuzzVerifyResult(f *testing.F) {
	dispatchResultSeeds(f, "result")
	nodes := signerKeys{"node-eu-1": nodePriv.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := verifierAt(t, t0).VerifyResult(raw, nodes)
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
		r, err := protocol.DecodeResult(raw, 0)
		if err != nil {
			return
		}
		r.KeyID = "node-eu-1"
		if err := r.Sign(nodePriv); err != nil {
			t.Fatalf("decoded result does not sign: %v", err)
		}
		if _, err := verifierAt(t, t0).VerifyResult(encode(t, r), nodes); err != nil {
			t.Fatalf("re-signed result: %v", err)
		}
	})
}

func FuzzDecodeReceipt(f *testing.F) {
	f.Add([]byte(`{"type":"writ.receipt/v1","index":0,"intent_id":"i","tenant":"t","principal":"p","tool":"echo","payload_hash":"sha256:00","idempotency_key":"k","outcome":"denied","policy":null,"approval":null,"dispatch":null,"result":null,"recorded_at":"2026-11-22T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := protocol.DecodeReceipt(raw, 0)
		if err != nil {
			return
		}
		leaf, err := r.Leaf()
		if err != nil {
			t.Fatalf("decoded receipt has no leaf: %v", err)
		}
		back, err := protocol.DecodeReceipt(leaf, 0)
		if err != nil {
			t.Fatalf("leaf does not decode: %v", err)
		}
		if again, _ := back.Leaf(); string(again) != string(leaf) {
			t.Fatalf("leaf not stable:\n%s\n%s", leaf, again)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("writ.example/ledger\n13\n1WTzbvOGMhupAUha7iGbiEVDCRjc72V4u5835Rhlorw=\n"))
	f.Add([]byte("o\n0\n1WTzbvOGMhupAUha7iGbiEVDCRjc72V4u5835Rhlorw=\next\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := protocol.ParseCheckpoint(raw)
		if err != nil {
			return
		}
		if string(c.Marshal()) != string(raw) {
			t.Fatalf("checkpoint does not round-trip: %q -> %q", raw, c.Marshal())
		}
	})
}

// FuzzResultAttest: any egress and attest members either make the result
// malformed or survive signing, encoding and verifying unchanged.
func FuzzResultAttest(f *testing.F) {
	f.Add([]byte(`{"entries":[{"host":"a.example","port":443,"via":"connect","allowed":true,"bytes_up":1,"bytes_down":2}],"allowed":1,"refused":0,"bytes_up":1,"bytes_down":2}`),
		[]byte(`{"exec_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","wall_ms":1,"cpu_ms":1,"max_rss_bytes":1}`))
	f.Add([]byte(`{"entries":[{"host":"","port":0,"via":"sni","allowed":false,"reason":"bad_request","bytes_up":0,"bytes_down":0}],"allowed":0,"refused":9,"bytes_up":0,"bytes_down":0}`), []byte(`null`))
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, egress, attest []byte) {
		r := newResult()
		raw := strings.Replace(string(encode(t, r)), `"sandbox":`, `"egress":`+string(egress)+`,"attest":`+string(attest)+`,"sandbox":`, 1)
		d, err := protocol.DecodeResult([]byte(raw), 0)
		if err != nil {
			if protocol.CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if err := d.Sign(nodePriv); err != nil {
			t.Fatalf("decoded result does not sign: %v", err)
		}
		got, err := verifierAt(t, t0).VerifyResult(encode(t, d), nodes)
		if err != nil {
			t.Fatalf("re-signed result: %v", err)
		}
		if !reflect.DeepEqual(got.Egress, d.Egress) || !reflect.DeepEqual(got.Attest, d.Attest) {
			t.Fatalf("round trip changed egress or attest")
		}
	})
}
