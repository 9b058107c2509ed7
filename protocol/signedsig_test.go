package protocol

import (
	"bytes"
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// wantWithSig is withSigMember's answer made the slow way: decode, add the
// member, encode, canonicalize.
func wantWithSig(t *testing.T, body []byte, sig string) []byte {
	t.Helper()
	var m map[string]jsontext.Value
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["sig"] = jsontext.Value(`"` + sig + `"`)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Canonicalize(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWithSigMember(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"a":1}`,
		`{"z":1}`,
		`{"a":1,"z":2}`,
		`{"params":{"sig":"inner","z":[1,{"sig":2}]},"tool":"t"}`,
		`{"sandbox":"wasm","sif":1}`,
		`{"si":1,"sig0":2}`,
		`{"sif":[],"sih":{},"tool":"x","é":"non-ascii"}`,
		`{"\u20ac":1,"a":"b"}`,
		`{"si\u0001":1,"si\\":2,"si\"":3,"sig\\":4,"sig\"":5}`,
	} {
		c, err := Canonicalize([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := withSigMember(c, "c2lnbmF0dXJl+/==")
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if want := wantWithSig(t, c, "c2lnbmF0dXJl+/=="); !bytes.Equal(got, want) {
			t.Errorf("%s: got %s, want %s", c, got, want)
		}
	}
	for _, bad := range []string{`[]`, `"s"`, `{"sig":"x"}`, `{"a":1,"sig":"x","z":2}`} {
		if _, err := withSigMember([]byte(bad), "AA=="); CodeOf(err) != CodeMalformed {
			t.Errorf("%s: got %v, want malformed", bad, err)
		}
	}
}

// TestDispatchSignCanonical: the canonical form SignCanonical returns is the
// one encoding the signed dispatch and canonicalizing it makes, with the
// signature Sign makes.
func TestDispatchSignCanonical(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	for _, params := range []string{`{}`, `{"msg":"hi"}`, `{"sig":"x","b":[1,2.5,"\u00e9"],"a":{"z":null}}`} {
		d := &Dispatch{Type: KindDispatch.Type(), ID: "dsp-1", IntentID: "int-1", Node: "node-1", Tool: "echo",
			ToolManifestHash: "sha256:" + string(bytes.Repeat([]byte{'a'}, 64)), Params: jsontext.Value(params),
			PayloadHash: "sha256:" + string(bytes.Repeat([]byte{'b'}, 64)), Sandbox: "wasm",
			IssuedAt: "2026-11-26T10:00:00Z", ExpiresAt: "2026-11-26T10:01:00Z", Nonce: "MDEyMzQ1Njc4OWFiY2RlZg==", Fence: 3, KeyID: "srv-1"}
		got, err := d.SignCanonical(priv)
		if err != nil {
			t.Fatal(err)
		}
		sig := d.Sig
		if err := d.Sign(priv); err != nil {
			t.Fatal(err)
		}
		if d.Sig != sig {
			t.Fatalf("params %s: SignCanonical signed %s, Sign %s", params, sig, d.Sig)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Canonicalize(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("params %s:\ngot  %s\nwant %s", params, got, want)
		}
	}
}

// FuzzWithSigMember: for any canonical object without a top-level "sig",
// inserting one gives what encoding and canonicalizing give.
func FuzzWithSigMember(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"z":{"sig":1}}`, `{"sia":1,"sih":2}`, `{"\u00e9":1,"a":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonicalize(raw)
		if err != nil || len(c) == 0 || c[0] != '{' {
			return
		}
		var m map[string]jsontext.Value
		if json.Unmarshal(c, &m) != nil {
			return
		}
		if _, ok := m["sig"]; ok {
			if _, err := withSigMember(c, "AA=="); err == nil {
				t.Fatalf("%s: a second sig was inserted", c)
			}
			return
		}
		got, err := withSigMember(c, "AA==")
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if want := wantWithSig(t, c, "AA=="); !bytes.Equal(got, want) {
			t.Fatalf("%s: got %s, want %s", c, got, want)
		}
	})
}

// TestResultSignCanonical: the canonical form Result.SignCanonical returns is
// the one encoding the signed result and canonicalizing it makes, with the
// signature Sign makes, and canonical input to decoding, which skips the
// library's canonicalization.
func TestResultSignCanonical(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	hash := "sha256:" + string(bytes.Repeat([]byte{'c'}, 64))
	for _, tc := range []struct {
		name string
		mod  func(*Result)
	}{
		{"v2", func(r *Result) { r.SetCaptured(HashBytes(nil), 0, nil, false) }},
		{"v2 truncated", func(r *Result) { r.OutputBytes = 1 << 20; r.SetCaptured(hash, 4096, nil, true) }},
		{"v1 with output", func(r *Result) {
			r.Type, r.Output, r.OutputBytes = ResultTypeV1, "héllo \"quoted\"\n\t\u2028<&>", 24
		}},
		{"failed", func(r *Result) { r.SetCaptured(HashBytes(nil), 0, nil, false); r.Status, r.ExitCode = StatusError, 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Type: ResultTypeV2, DispatchID: "dsp-1", IntentID: "int-1", Node: "node-1",
				Status: StatusOK, OutputHash: hash, Sandbox: "wasm", StartedAt: "2026-11-26T10:00:00.000Z",
				FinishedAt: "2026-11-26T10:00:00.001Z", KeyID: "node-1"}
			tc.mod(r)
			got, err := r.SignCanonical(priv)
			if err != nil {
				t.Fatal(err)
			}
			sig := r.Sig
			if err := r.Sign(priv); err != nil {
				t.Fatal(err)
			}
			if r.Sig != sig {
				t.Fatalf("SignCanonical signed %s, Sign %s", sig, r.Sig)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Canonicalize(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if !isCanonical(got) {
				t.Errorf("decoding would canonicalize %s again", got)
			}
		})
	}
}

// TestSignedTypesEncodeCanonical: Dispatch, Limits, Intent and Target declare
// their fields in the sorted order of their JSON names, so that a dispatch and
// an intent encode as canonical JSON and signing or verifying one skips the
// library's canonicalization.
func TestSignedTypesEncodeCanonical(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Dispatch](), reflect.TypeFor[Limits](), reflect.TypeFor[Intent](), reflect.TypeFor[Target](),
	} {
		prev := ""
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name <= prev {
				t.Errorf("%s.%s: JSON name %q is not after %q", typ.Name(), typ.Field(i).Name, name, prev)
			}
			prev = name
		}
	}
	d := &Dispatch{Type: KindDispatch.Type(), ID: "dsp-1", IntentID: "int-1", Node: "node-1", Tool: "echo",
		ToolManifestHash: "sha256:" + strings.Repeat("a", 64), Params: jsontext.Value(`{"a":[1,2.5,"é"],"msg":"hi"}`),
		PayloadHash: "sha256:" + strings.Repeat("b", 64), Sandbox: "wasm",
		Limits:   Limits{TimeoutMS: 5000, MemoryBytes: 1 << 26, OutputBytes: 65536, CPUMS: 1000, Pids: 8},
		IssuedAt: "2026-11-26T10:00:00Z", ExpiresAt: "2026-11-26T10:01:00Z", Nonce: "MDEyMzQ1Njc4OWFiY2RlZg==", Fence: 3, KeyID: "srv-1"}
	in := &Intent{Type: KindIntent.Type(), ID: "int-1", Tenant: "acme", Principal: "bot", RunID: "run-1", Tool: "echo",
		Params: jsontext.Value(`{"msg":"hi"}`), IdempotencyKey: "k", IssuedAt: "2026-11-26T10:00:00Z",
		ExpiresAt: "2026-11-26T10:01:00Z", Target: &Target{Labels: map[string]string{"zone": "b", "os": "linux", "arch": "amd64"}},
		Context: jsontext.Value(`{"trace":"t"}`), KeyID: "orch-1"}
	if err := in.SetPayloadHash(); err != nil {
		t.Fatal(err)
	}
	if err := in.Sign([]byte("secret")); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{d, in} {
		b, err := json.Marshal(v, json.Deterministic(true))
		if err != nil {
			t.Fatal(err)
		}
		if !isCanonical(b) {
			t.Errorf("%T does not encode as canonical JSON: %s", v, b)
		}
	}
}
