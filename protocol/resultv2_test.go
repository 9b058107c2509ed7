package protocol_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

var updateVectors = flag.Bool("update", false, "rewrite testdata/result_v2.json from its generator")

// resultV2Vectors is testdata/result_v2.json: writ.result/v2 objects, how
// they verify, and outputs checked against them. Output members are
// standard base64.
type resultV2Vectors struct {
	Description string `json:"description"`
	NodeKey     struct {
		KeyID  string `json:"key_id"`
		Seed   string `json:"seed"`
		Public string `json:"public"`
	} `json:"node_key"`
	Cases []resultV2Case `json:"cases"`
}

type resultV2Case struct {
	Name         string `json:"name"`
	JSON         string `json:"json"`
	SigningInput string `json:"signing_input,omitempty"`
	// Error is the code verification reports; empty when valid.
	Error string `json:"error,omitempty"`
	// Captured is the output sent beside the result; Full everything the
	// tool wrote, when it differs; Wrong an output that must not match.
	Captured string `json:"captured,omitempty"`
	Full     string `json:"full,omitempty"`
	Wrong    string `json:"wrong,omitempty"`
}

var v2Seed = []byte("writ-result-v2-vector-node-seed!")

// generateResultV2 builds the vectors: deterministic, as Ed25519 is.
func generateResultV2(t *testing.T) resultV2Vectors {
	priv := ed25519.NewKeyFromSeed(v2Seed)
	var v resultV2Vectors
	v.Description = "writ.result/v2: results signed by a node key with prefix \"writ/v1/result\\n\"; captured is the output sent beside the result (base64), full everything the tool wrote when truncated, wrong an output that must be refused with output_mismatch"
	v.NodeKey.KeyID = "node-eu-1"
	v.NodeKey.Seed = base64.StdEncoding.EncodeToString(v2Seed)
	v.NodeKey.Public = base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	base := func(captured, full []byte, truncated bool) *protocol.Result {
		r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: "dsp-0001", IntentID: "int-0001",
			Node: "node-eu-1", Status: protocol.StatusOK, Sandbox: "wasm", KeyID: "node-eu-1",
			StartedAt: "2026-11-22T10:05:00.010Z", FinishedAt: "2026-11-22T10:05:00.012Z"}
		r.SetCaptured(protocol.HashBytes(full), int64(len(full)), captured, truncated)
		return r
	}
	sign := func(r *protocol.Result) []byte {
		if err := r.Sign(priv); err != nil {
			t.Fatal(err)
		}
		return encode(t, r)
	}
	b64 := base64.StdEncoding.EncodeToString
	add := func(name string, raw []byte, code protocol.Code, captured, full, wrong []byte) {
		c := resultV2Case{Name: name, JSON: string(raw), Error: string(code)}
		if code == "" {
			in, err := protocol.SigningInput(protocol.KindResult, raw)
			if err != nil {
				t.Fatal(err)
			}
			c.SigningInput = string(in)
		}
		if captured != nil {
			c.Captured = b64(captured)
		}
		if full != nil {
			c.Full = b64(full)
		}
		if wrong != nil {
			c.Wrong = b64(wrong)
		}
		v.Cases = append(v.Cases, c)
	}
	hello := []byte(`{"msg":"hello world"}`)
	add("valid result", sign(base(hello, hello, false)), "", hello, nil, []byte(`{"msg":"hello world!"}`))

	full := bytes.Repeat([]byte{0xff, 0x00, 'x'}, 100)
	add("truncated binary output", sign(base(full[:64], full, false)), "", full[:64], full, full[:63])

	empty := base(nil, nil, false)
	empty.Status, empty.Sandbox, empty.ExitCode, empty.Error = protocol.StatusRefused, "", -1, "sandbox_refused: interpreter denied"
	add("refused, no output", sign(empty), "", []byte{}, nil, []byte("x"))

	r := base(hello, hello, false)
	raw := sign(r)
	add("captured hash changed after signing", bytes.Replace(raw, []byte(r.CapturedHash),
		[]byte(protocol.HashBytes([]byte("other"))), 2), protocol.CodeBadSignature, nil, nil, nil)

	withText := base(hello, hello, false)
	withText.Sig = "AAAA"
	add("v2 carrying output text", bytes.Replace(encode(t, withText), []byte(`"output_bytes"`),
		[]byte(`"output":"{\"msg\":\"hello world\"}","output_bytes"`), 1), protocol.CodeMalformed, nil, nil, nil)

	short := base(hello[:5], hello, false)
	short.Truncated = false
	add("captured short of the output but not truncated", encode(t, short), protocol.CodeMalformed, nil, nil, nil)

	big := bytes.Repeat([]byte("y"), protocol.MaxCapturedBytes+1)
	add("captured past 128 KiB", encode(t, base(big, big, false)), protocol.CodeMalformed, nil, nil, nil)

	noCaptured := base(hello, hello, false)
	noCaptured.CapturedBytes = nil
	add("captured_bytes missing", encode(t, noCaptured), protocol.CodeMalformed, nil, nil, nil)
	return v
}

func TestResultV2Vectors(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "result_v2.json")
	gen := generateResultV2(t)
	want, err := json.Marshal(gen, json.Deterministic(true), jsontext.Multiline(true))
	if err != nil {
		t.Fatal(err)
	}
	if *updateVectors {
		if err := os.WriteFile(path, append(want, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./protocol -run TestResultV2Vectors -update writes it)", err)
	}
	if !bytes.Equal(bytes.TrimSpace(b), want) {
		t.Errorf("%s differs from its generator (run go test ./protocol -run TestResultV2Vectors -update if the change is intended)", path)
	}
	var v resultV2Vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	pub, _ := base64.StdEncoding.DecodeString(v.NodeKey.Public)
	nodes := signerKeys{v.NodeKey.KeyID: ed25519.PublicKey(pub)}
	seed, _ := base64.StdEncoding.DecodeString(v.NodeKey.Seed)
	if len(v.Cases) < 5 {
		t.Fatalf("got %d cases, want at least 5", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r, err := verifierAt(t, t0).VerifyResult([]byte(c.JSON), nodes)
			if got := string(protocol.CodeOf(err)); got != c.Error {
				t.Fatalf("verify: got code %q (%v), want %q", got, err, c.Error)
			}
			if err != nil {
				return
			}
			if r.Version() != 2 || r.Output != "" {
				t.Errorf("got version %d with output %q, want 2 and none", r.Version(), r.Output)
			}
			in, err := protocol.SigningInput(protocol.KindResult, []byte(c.JSON))
			if err != nil || string(in) != c.SigningInput {
				t.Errorf("signing input:\n got %q (%v)\nwant %q", in, err, c.SigningInput)
			}
			want := r.Sig
			if err := r.Sign(ed25519.NewKeyFromSeed(seed)); err != nil || r.Sig != want {
				t.Errorf("re-signed: got %s (%v), want %s", r.Sig, err, want)
			}
			captured := mustB64(t, c.Captured)
			if err := r.CheckCaptured(captured); err != nil {
				t.Errorf("captured output: %v", err)
			}
			if m, err := r.CheckOutput(captured); err != nil || m != protocol.MatchCaptured {
				t.Errorf("check captured: got %v, %v; want captured", m, err)
			}
			if c.Full != "" {
				full := mustB64(t, c.Full)
				if m, err := r.CheckOutput(full); err != nil || m != protocol.MatchFull {
					t.Errorf("check full: got %v, %v; want full", m, err)
				}
				if err := r.CheckCaptured(full); protocol.CodeOf(err) != protocol.CodeOutputMismatch {
					t.Errorf("full output as captured: got %v, want output_mismatch", err)
				}
				if sha256.Sum256(full) == sha256.Sum256(captured) || !r.Truncated {
					t.Error("a full output vector must differ from the captured one, in a truncated result")
				}
			}
			wrong := mustB64(t, c.Wrong)
			if _, err := r.CheckOutput(wrong); protocol.CodeOf(err) != protocol.CodeOutputMismatch {
				t.Errorf("wrong output: got %v, want output_mismatch", err)
			}
			if err := r.CheckCaptured(wrong); protocol.CodeOf(err) != protocol.CodeOutputMismatch {
				t.Errorf("wrong captured: got %v, want output_mismatch", err)
			}
		})
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultV1Output: a v1 result's output member is checked as its
// captured output, and v2 members are refused in a v1.
func TestResultV1Output(t *testing.T) {
	t.Parallel()
	r := &protocol.Result{Type: protocol.ResultTypeV1, DispatchID: "d-1", IntentID: "i-1", Node: "n-1",
		Status: protocol.StatusOK, Sandbox: "wasm", KeyID: "n-1", Output: "aGk=", OutputEncoding: "base64",
		OutputHash: protocol.HashBytes([]byte("hi")), OutputBytes: 2,
		StartedAt: protocol.FormatTime(t0), FinishedAt: protocol.FormatTime(t0)}
	if err := r.Sign(nodePriv); err != nil {
		t.Fatal(err)
	}
	if m, err := r.CheckOutput([]byte("hi")); err != nil || m != protocol.MatchCaptured {
		t.Errorf("got %v, %v; want captured", m, err)
	}
	if _, err := r.CheckOutput([]byte("ho")); protocol.CodeOf(err) != protocol.CodeOutputMismatch {
		t.Errorf("got %v, want output_mismatch", err)
	}
	if err := r.CheckCaptured([]byte("hi")); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Errorf("CheckCaptured of a v1: got %v, want malformed", err)
	}
	r.CapturedHash = r.OutputHash
	if err := r.Sign(nodePriv); protocol.CodeOf(err) != protocol.CodeMalformed {
		t.Errorf("v1 with captured_hash: got %v, want malformed", err)
	}
}

// TestResultV2SizeIndependentOfOutput: what a v2 result (and so a receipt
// and its Raft entry) weighs does not grow with the output: a 64 KiB output
// makes a v1 of over 64 KiB and a v2 under 1 KiB.
func TestResultV2SizeIndependentOfOutput(t *testing.T) {
	t.Parallel()
	out := bytes.Repeat([]byte("x"), 64<<10)
	size := func(typ string, out []byte) int {
		r := &protocol.Result{Type: typ, DispatchID: "dsp-0123456789abcdef", IntentID: "int-0123456789abcdef",
			Node: "node-0123456789", KeyID: "node-0123456789", Status: protocol.StatusOK, Sandbox: "wasm",
			StartedAt: "2026-11-22T10:05:00.010Z", FinishedAt: "2026-11-22T10:05:00.012Z"}
		if typ == protocol.ResultTypeV1 {
			r.Output, r.OutputHash, r.OutputBytes = string(out), protocol.HashBytes(out), int64(len(out))
		} else {
			r.SetCaptured(protocol.HashBytes(out), int64(len(out)), out, false)
		}
		if err := r.Sign(nodePriv); err != nil {
			t.Fatal(err)
		}
		return len(encode(t, r))
	}
	v1, v2, empty := size(protocol.ResultTypeV1, out), size(protocol.ResultTypeV2, out), size(protocol.ResultTypeV2, nil)
	t.Logf("64 KiB output: v1 %d bytes, v2 %d bytes; empty output: v2 %d bytes", v1, v2, empty)
	if v1 < 64<<10 || v2 >= 1024 || v2-empty > 8 {
		t.Fatalf("got v1 %d, v2 %d (empty %d) bytes; want v1 past 64 KiB, v2 under 1 KiB and not growing with the output", v1, v2, empty)
	}
}
