package protocol_test

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

// FuzzVerifyResult covers both versions: seeds are the shared v1 vectors and
// the v2 vectors of testdata/result_v2.json. A v2 that decodes must say
// what a verifier relies on: no text, and truncated whenever less was kept.
func FuzzVerifyResult(f *testing.F) {
	dispatchResultSeeds(f, "result")
	if b, err := os.ReadFile(filepath.Join("testdata", "result_v2.json")); err == nil {
		var v resultV2Vectors
		if json.Unmarshal(b, &v) == nil {
			for _, c := range v.Cases {
				f.Add([]byte(c.JSON))
			}
		}
	}
	nodes := signerKeys{"node-eu-1": nodePriv.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, err := verifierAt(t, t0).VerifyResult(raw, nodes)
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
		checkResultCanonical(t, raw, nodes, err)
		r, err := protocol.DecodeResult(raw, 0)
		if err != nil {
			return
		}
		if r.Version() == 2 {
			switch {
			case r.Output != "" || r.OutputEncoding != "" || r.CapturedBytes == nil:
				t.Fatalf("a v2 decoded with output text or without captured_bytes: %s", raw)
			case !r.Truncated && (*r.CapturedBytes != r.OutputBytes || r.CapturedHash != r.OutputHash):
				t.Fatalf("a v2 not truncated decoded with captured differing from output: %s", raw)
			}
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
	// A receipt holding a writ.result/v2, from the v2 vectors.
	if b, err := os.ReadFile(filepath.Join("testdata", "result_v2.json")); err == nil {
		var v resultV2Vectors
		if json.Unmarshal(b, &v) == nil && len(v.Cases) > 0 {
			f.Add([]byte(`{"type":"writ.receipt/v1","index":3,"intent_id":"int-0001","tenant":"t","principal":"p","tool":"echo","payload_hash":"sha256:00","idempotency_key":"k","outcome":"completed","policy":null,"approval":null,"dispatch":{"id":"dsp-0001","node":"node-eu-1","fence":7},"result":` +
				v.Cases[0].JSON + `,"recorded_at":"2026-11-22T10:00:00Z"}`))
		}
	}
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

// FuzzOutputEncoding: EncodeOutput and DecodeOutput give back any bytes, and
// DecodeOutput refuses (never panics on) what is not an encoding of bytes.
func FuzzOutputEncoding(f *testing.F) {
	for _, s := range [][]byte{nil, []byte("hello"), {0xff, 0}, []byte("é"), []byte("/wB4")} {
		f.Add(s, "")
		f.Add(s, "base64")
	}
	f.Fuzz(func(t *testing.T, b []byte, encoding string) {
		text, enc := protocol.EncodeOutput(b)
		back, err := protocol.DecodeOutput(text, enc)
		if err != nil || string(back) != string(b) {
			t.Fatalf("%q: encoded %q %q, decoded %q, %v", b, text, enc, back, err)
		}
		if out, err := protocol.DecodeOutput(string(b), encoding); err == nil {
			if again, enc2 := protocol.EncodeOutput(out); enc2 == "" && encoding == "" && again != string(b) {
				t.Fatalf("text %q decoded to %q and encodes to %q", b, out, again)
			}
		} else if protocol.CodeOf(err) != protocol.CodeMalformed {
			t.Fatalf("DecodeOutput(%q, %q): %v without the malformed code", b, encoding, err)
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

// FuzzResultMCP: any mcp member either makes the result malformed or
// survives signing, encoding and verifying unchanged.
func FuzzResultMCP(f *testing.F) {
	f.Add([]byte(`{"tool":"read_file","server":"sha256:0000000000000000000000000000000000000000000000000000000000000000","inner_tier":"bwrap"}`))
	f.Add([]byte(`{"tool":"search","server":"https://mcp.example/mcp"}`))
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	f.Fuzz(func(t *testing.T, member []byte) {
		r := newResult()
		raw := strings.Replace(string(encode(t, r)), `"sandbox":`, `"mcp":`+string(member)+`,"sandbox":`, 1)
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
		if !reflect.DeepEqual(got.MCP, d.MCP) {
			t.Fatalf("round trip changed mcp")
		}
	})
}

// FuzzDecodeAdminEntry: decoding never panics, and what decodes has a leaf
// that decodes to the same leaf again and is never a receipt.
func FuzzDecodeAdminEntry(f *testing.F) {
	f.Add([]byte(`{"type":"writ.admin/v1","index":4,"actor":"dev","action":"tool.put","object":"echo","after":"sha256:0000000000000000000000000000000000000000000000000000000000000000","recorded_at":"2026-11-22T10:00:00Z"}`))
	if b, err := os.ReadFile(filepath.Join("testdata", "admin_v1.json")); err == nil {
		var v adminVectors
		if json.Unmarshal(b, &v) == nil {
			for _, c := range v.Cases {
				f.Add([]byte(c.JSON))
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := protocol.DecodeAdminEntry(raw, 0)
		if err != nil {
			if protocol.CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		leaf, err := a.Leaf()
		if err != nil {
			t.Fatalf("decoded entry has no leaf: %v", err)
		}
		back, err := protocol.DecodeAdminEntry(leaf, 0)
		if err != nil {
			t.Fatalf("leaf does not decode: %v", err)
		}
		if again, _ := back.Leaf(); string(again) != string(leaf) {
			t.Fatalf("leaf not stable:\n%s\n%s", leaf, again)
		}
		if _, err := protocol.DecodeReceipt(leaf, 0); err == nil {
			t.Fatalf("an admin entry decodes as a receipt: %s", leaf)
		}
	})
}

// manifestSeeds are tool manifests as registered (spacing, member order,
// spelled-out defaults, Unicode, big and fractional numbers) and texts
// Canonicalize refuses (duplicate names, a number beyond a double, an
// integer a double cannot hold, invalid UTF-8, a lone surrogate, not JSON).
var manifestSeeds = []string{
	`{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{}}`,
	"{ \"tier\" : \"wasm\", \"limits\":{}, \"module\":\"/opt/echo.wasm\",\n \"name\":\"echo\" }",
	`{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{"timeout_ms":30000}}`,
	`{"name":"greet","tier":"process","argv":["/usr/bin/env","grüß"],"env":{"A":"\u00e9","B":"\u2028"},"limits":{"memory_bytes":67108864,"cpu":0.5,"big":1e21}}`,
	`{"name":"x","tier":"runc","mounts":[{"src":"/a","ro":true},{"src":"/b","ro":false}],"nothing":null}`,
	`[]`, `"text"`, `-0`, `1E+2`,
	`{"a":1,"a":2}`,
	`{"n":1e400}`,
	`{"n":9007199254740993}`,
	"{\"s\":\"\xff\"}",
	`{"s":"\ud800"}`,
	`{`, ``, `{"a":1} {"b":2}`,
}

// FuzzManifestHash: ManifestHash never panics; it refuses, with the
// malformed code, exactly what Canonicalize refuses; what it accepts hashes
// to HashBytes of the canonical form, so texts that canonicalize equal
// (the canonical form itself, the text re-indented, and any two inputs
// whose canonical forms are equal) hash equal, and texts whose canonical
// forms differ hash differently.
func FuzzManifestHash(f *testing.F) {
	for i, a := range manifestSeeds {
		f.Add([]byte(a), []byte(manifestSeeds[(i+1)%len(manifestSeeds)]))
		f.Add([]byte(a), []byte(a))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ha, err := protocol.ManifestHash(a)
		canon, cerr := protocol.Canonicalize(a)
		if cerr != nil {
			if err == nil || protocol.CodeOf(err) != protocol.CodeMalformed || ha != "" {
				t.Fatalf("Canonicalize refuses %q (%v) but ManifestHash gives %q, %v", a, cerr, ha, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Canonicalize accepts %q but ManifestHash refuses it: %v", a, err)
		}
		if ha != protocol.HashBytes(canon) {
			t.Fatalf("ManifestHash(%q) = %s, not HashBytes of its canonical form %s", a, ha, protocol.HashBytes(canon))
		}
		if again, err := protocol.ManifestHash(canon); err != nil || again != ha {
			t.Fatalf("the canonical form %q of %q hashes to %s, %v; want %s", canon, a, again, err, ha)
		}
		indented := jsontext.Value(bytes.Clone(a))
		if err := indented.Indent(jsontext.WithIndent("\t")); err == nil {
			if again, err := protocol.ManifestHash(indented); err != nil || again != ha {
				t.Fatalf("%q re-indented as %q hashes to %s, %v; want %s", a, indented, again, err, ha)
			}
		}
		hb, err := protocol.ManifestHash(b)
		if err != nil {
			return
		}
		canonB, _ := protocol.Canonicalize(b)
		if bytes.Equal(canon, canonB) != (ha == hb) {
			t.Fatalf("canonical forms %q and %q (equal: %t) hash to %s and %s", canon, canonB, bytes.Equal(canon, canonB), ha, hb)
		}
	})
}
