package nodeagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// TestResultAttestsWhatRan: the signed result of a run carries the digest
// of the module the tier ran and its usage, and verifies.
func TestResultAttestsWhatRan(t *testing.T) {
	h := newHarness(t, 1)
	raw := sign(t, h.dispatch("echo", `{"msg":"attest"}`), serverKey)
	if err := h.x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	r := h.outbox()["dsp-1"]
	if r == nil || r.Status != protocol.StatusOK || r.Attest == nil {
		t.Fatalf("result %+v: want ok with attest", r)
	}
	e, _ := h.allow.Lookup("echo")
	b, err := os.ReadFile(e.Manifest.Module)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := "sha256:" + hex.EncodeToString(sum[:]); r.Attest.ExecDigest != want {
		t.Errorf("exec_digest %q, want %q", r.Attest.ExecDigest, want)
	}
	if r.Attest.WallMS < 0 || r.Attest.MaxRSSBytes < 0 || r.Egress != nil {
		t.Errorf("attest %+v, egress %+v", r.Attest, r.Egress)
	}
}

// TestFillAttest: an outcome's usage, digest and egress audit become the
// result's attest and egress members, which sign and verify; a refused
// outcome has neither.
func TestFillAttest(t *testing.T) {
	out := sandbox.Outcome{Status: sandbox.StatusError, ExitCode: 1, Tier: "gvisor", OutputHash: protocol.HashBytes(nil),
		ExecDigest: protocol.HashBytes([]byte("exe")),
		Usage:      sandbox.Usage{Wall: 1500 * time.Millisecond, UserCPU: 300 * time.Millisecond, SystemCPU: 200 * time.Millisecond, MaxRSS: 1 << 20},
		Egress: &sandbox.EgressAudit{Allowed: 1, Refused: 70, BytesUp: 10, BytesDown: 20, Entries: []sandbox.EgressEntry{
			{Host: "api.test", Port: 443, Via: "connect", Allowed: true, BytesUp: 10, BytesDown: 20},
			{Host: "evil.test", Port: 443, Via: "sni", Reason: "not_allowed"},
		}}}
	r := &protocol.Result{Type: protocol.ResultTypeV2, DispatchID: "dsp-1", IntentID: "int-1", Node: nodeID, KeyID: nodeID,
		StartedAt: "2026-11-22T10:00:00.000Z", FinishedAt: "2026-11-22T10:00:02.000Z"}
	fillFromOutcome(r, out)
	fillAttest(r, out)
	want := protocol.ResultAttest{ExecDigest: out.ExecDigest, WallMS: 1500, CPUMS: 500, MaxRSSBytes: 1 << 20}
	if r.Attest == nil || *r.Attest != want {
		t.Errorf("attest %+v, want %+v", r.Attest, want)
	}
	if e := r.Egress; e == nil || e.Allowed != 1 || e.Refused != 70 || len(e.Entries) != 2 || e.Entries[1].Reason != "not_allowed" || e.BytesDown != 20 {
		t.Errorf("egress %+v", r.Egress)
	}
	if err := r.Sign(nodeKey); err != nil {
		t.Fatal(err)
	}
	cfg := protocol.DefaultConfig()
	cfg.Now = func() time.Time { return time.Date(2026, 11, 22, 10, 0, 3, 0, time.UTC) }
	v, err := protocol.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyResult(raw, nodes); err != nil {
		t.Fatalf("verify: %v", err)
	}
	refused := &protocol.Result{}
	ro := sandbox.Outcome{Status: sandbox.StatusRefused, Tier: "gvisor", Reason: "unavailable"}
	fillFromOutcome(refused, ro)
	fillAttest(refused, ro)
	if refused.Attest != nil || refused.Egress != nil {
		t.Errorf("refused: attest %+v egress %+v", refused.Attest, refused.Egress)
	}
}
