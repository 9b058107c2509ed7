package protocol_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

func newDispatch(mod ...func(*protocol.Dispatch)) *protocol.Dispatch {
	d := &protocol.Dispatch{
		Type: "writ.dispatch/v1", ID: "dsp-1", IntentID: "int-1", Node: "node-1", Tool: "echo",
		ToolManifestHash: protocol.HashBytes([]byte("manifest")), Params: jsontext.Value(`{"msg":"hi"}`),
		Sandbox: "wasm", Limits: protocol.Limits{TimeoutMS: 5000, OutputBytes: 65536},
		IssuedAt: protocol.FormatTime(t0), ExpiresAt: protocol.FormatTime(t0.Add(time.Minute)),
		Nonce: "AAECAwQFBgcICQoLDA0ODw==", Fence: 42, KeyID: "server-1",
	}
	d.PayloadHash, _ = protocol.PayloadHash(d.Tool, d.Params)
	for _, m := range mod {
		m(d)
	}
	return d
}

func signDispatch(t *testing.T, d *protocol.Dispatch, priv ed25519.PrivateKey) []byte {
	t.Helper()
	if err := d.Sign(priv); err != nil {
		t.Fatal(err)
	}
	return encode(t, d)
}

func TestDispatchChecks(t *testing.T) {
	t.Parallel()
	servers := signerKeys{"server-1": serverPriv.Public().(ed25519.PublicKey)}
	v := verifierAt(t, t0.Add(10*time.Second))
	for _, c := range []struct {
		name string
		raw  func() []byte
		want protocol.Code
	}{
		{"valid", func() []byte { return signDispatch(t, newDispatch(), serverPriv) }, ""},
		{"untrusted server key", func() []byte {
			return signDispatch(t, newDispatch(func(d *protocol.Dispatch) { d.KeyID = "server-9" }), serverPriv)
		}, protocol.CodeUnknownKey},
		{"signed by a node key", func() []byte { return signDispatch(t, newDispatch(), nodePriv) }, protocol.CodeBadSignature},
		{"tampered params", func() []byte {
			return []byte(strings.Replace(string(signDispatch(t, newDispatch(), serverPriv)), `"hi"`, `"rm"`, 1))
		}, protocol.CodeBadSignature},
		{"other node", func() []byte {
			return signDispatch(t, newDispatch(func(d *protocol.Dispatch) { d.Node = "node-2" }), serverPriv)
		}, protocol.CodeWrongNode},
		{"params not matching the hash", func() []byte {
			return signDispatch(t, newDispatch(func(d *protocol.Dispatch) { d.Params = jsontext.Value(`{"msg":"rm"}`) }), serverPriv)
		}, protocol.CodePayloadHashMismatch},
		{"expired", func() []byte {
			return signDispatch(t, newDispatch(func(d *protocol.Dispatch) { d.ExpiresAt = protocol.FormatTime(t0.Add(5 * time.Second)) }), serverPriv)
		}, protocol.CodeExpired},
		{"issued in the future", func() []byte {
			return signDispatch(t, newDispatch(func(d *protocol.Dispatch) {
				d.IssuedAt, d.ExpiresAt = protocol.FormatTime(t0.Add(time.Minute)), protocol.FormatTime(t0.Add(2*time.Minute))
			}), serverPriv)
		}, protocol.CodeNotYetValid},
		{"zero fence", func() []byte {
			d := newDispatch(func(d *protocol.Dispatch) { d.Fence = 0 })
			return []byte(strings.Replace(string(encode(t, d)), `"fence":0`, `"fence":0,"sig":"x"`, 1))
		}, protocol.CodeMalformed},
		{"negative limit", func() []byte {
			return []byte(strings.Replace(string(signDispatch(t, newDispatch(), serverPriv)), `"timeout_ms":5000`, `"timeout_ms":-1`, 1))
		}, protocol.CodeMalformed},
		{"fractional fence", func() []byte {
			return []byte(strings.Replace(string(signDispatch(t, newDispatch(), serverPriv)), `"fence":42`, `"fence":42.5`, 1))
		}, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := v.VerifyDispatch(c.raw(), "node-1", servers)
			wantCode(t, err, c.want)
			if err == nil && string(d.Params) != `{"msg":"hi"}` {
				t.Errorf("params: got %s", d.Params)
			}
		})
	}
}

func newResult(mod ...func(*protocol.Result)) *protocol.Result {
	r := &protocol.Result{
		Type: "writ.result/v1", DispatchID: "dsp-1", IntentID: "int-1", Node: "node-1",
		Status: protocol.StatusOK, Output: "hi", OutputHash: protocol.HashBytes([]byte("hi")),
		OutputBytes: 2, Sandbox: "wasm", StartedAt: protocol.FormatTime(t0),
		FinishedAt: protocol.FormatTime(t0.Add(time.Millisecond)), KeyID: "node-1",
	}
	for _, m := range mod {
		m(r)
	}
	return r
}

func TestResultChecks(t *testing.T) {
	t.Parallel()
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	v := verifierAt(t, t0)
	for _, c := range []struct {
		name string
		mod  func(*protocol.Result)
		priv ed25519.PrivateKey
		want protocol.Code
	}{
		{"valid", nil, nodePriv, ""},
		{"refused without a tier", func(r *protocol.Result) {
			r.Status, r.Sandbox, r.Error = protocol.StatusRefused, "", "wrong_node"
		}, nodePriv, ""},
		{"binary output", func(r *protocol.Result) { r.Output, r.OutputEncoding = "AAE=", "base64" }, nodePriv, ""},
		{"signed by the server", nil, serverPriv, protocol.CodeBadSignature},
		{"unknown node key", func(r *protocol.Result) { r.KeyID = "node-9" }, nodePriv, protocol.CodeUnknownKey},
		{"unknown status", func(r *protocol.Result) { r.Status = "done" }, nodePriv, protocol.CodeMalformed},
		{"ran without a tier", func(r *protocol.Result) { r.Sandbox = "" }, nodePriv, protocol.CodeMalformed},
		{"unknown encoding", func(r *protocol.Result) { r.OutputEncoding = "hex" }, nodePriv, protocol.CodeMalformed},
		{"finished before started", func(r *protocol.Result) { r.FinishedAt = protocol.FormatTime(t0.Add(-time.Second)) }, nodePriv, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newResult()
			if c.mod != nil {
				c.mod(r)
			}
			input, err := protocol.SigningInput(protocol.KindResult, encode(t, r))
			if err != nil {
				t.Fatal(err)
			}
			r.Sig = protocol.Ed25519Sign(c.priv, input)
			_, err = v.VerifyResult(encode(t, r), nodes)
			wantCode(t, err, c.want)
		})
	}
}

// TestDomainSeparation: a valid signature of one kind never verifies as another.
func TestDomainSeparation(t *testing.T) {
	t.Parallel()
	r := newResult()
	if err := r.Sign(nodePriv); err != nil {
		t.Fatal(err)
	}
	raw := strings.Replace(string(encode(t, r)), `"writ.result/v1"`, `"writ.dispatch/v1"`, 1)
	if _, err := protocol.DecodeDispatch([]byte(raw), 0); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Fatalf("a result relabelled as a dispatch decoded: %v", err)
	}
	input, err := protocol.SigningInput(protocol.KindResult, encode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := protocol.SigningInput(protocol.KindDispatch, encode(t, r))
	if string(input) == string(other) || !strings.HasPrefix(string(input), "writ/v1/result\n") {
		t.Fatalf("signing inputs of two kinds are not separated: %q", input)
	}
}
