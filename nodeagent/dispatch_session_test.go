package nodeagent

import (
	"crypto/ed25519"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testcontrol"
	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// TestSignedDispatchThroughSession: a dispatch signed by a server key the
// agent learnt only from the welcome (certified by the CA it pinned at
// enrollment) runs in the real Executor (echo, wasm tier); its result comes
// back on the session signed by the key the node enrolled, with the output
// it commits to; the server's ack empties the outbox. A dispatch signed by
// a key no welcome carried is answered with a reject and runs nothing.
func TestSignedDispatchThroughSession(t *testing.T) {
	h := newHarness(t, 1)
	fc := testcontrol.Start(t, testcontrol.DefaultConfig())
	id, dir := enroll(t, fc)
	var live atomic.Pointer[running]
	x, err := NewExecutor(ExecutorConfig{NodeID: id.Node, Key: id.Key, Store: h.store, Allowlist: h.allow,
		Tiers: h.tiers, Verifier: h.verifier, Concurrency: 1, WorkDir: filepath.Join(h.dir, "work-session"),
		OnResult: func(p store.Pending) {
			if a := live.Load(); a != nil {
				go a.Deliver(p)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	live.Store(startAgent(t, fc, id, dir, x, x))
	s := fc.NextSession(t)

	forNode := func(keyID string) func(*protocol.Dispatch) {
		return func(d *protocol.Dispatch) { d.Node, d.KeyID = id.Node, keyID }
	}
	// Signed by the harness's server key under an id no welcome carried.
	stranger := sign(t, h.dispatch("echo", `{"msg":"stranger"}`, forNode("server-1")), serverKey)
	s.Send(t, protocol.FrameDispatch, protocol.DispatchFrame{Dispatch: stranger})
	var rej protocol.Reject
	if err := s.Next(t, protocol.FrameReject).DecodeBody(&rej); err != nil || rej.Error.Code != protocol.CodeUnknownKey {
		t.Fatalf("reject = %+v, %v; want %s", rej, err, protocol.CodeUnknownKey)
	}

	params := `{"msg":"through the session"}`
	d := h.dispatch("echo", params, forNode(testcontrol.SigningKeyID))
	s.Send(t, protocol.FrameDispatch, protocol.DispatchFrame{Dispatch: sign(t, d, fc.SigningKey())})
	var rf protocol.ResultFrame
	if err := s.Next(t, protocol.FrameResult).DecodeBody(&rf); err != nil {
		t.Fatal(err)
	}
	r, err := h.verifier.VerifyResult(rf.Result, keys{id.Node: id.Key.Public().(ed25519.PublicKey)})
	if err != nil {
		t.Fatalf("the result does not verify with the enrolled key: %v", err)
	}
	if r.DispatchID != d.ID || r.Node != id.Node || r.Status != protocol.StatusOK || r.Sandbox != "wasm" {
		t.Fatalf("result %+v, want ok for %s from %s in wasm", r, d.ID, id.Node)
	}
	if err := r.CheckCaptured(rf.Output); err != nil || string(rf.Output) != params {
		t.Fatalf("output %q (%v), want %q committed to by the result", rf.Output, err, params)
	}
	// The result is sent while the node commits it (ExecutorConfig.OnResult):
	// it reaches the outbox, alone (the rejected dispatch left nothing
	// there), and the ack takes it out.
	eventually.True(t, "the result to be committed to the outbox", func() bool { return h.runsOf(t) == 1 })
	s.Send(t, protocol.FrameAck, protocol.Ack{DispatchID: d.ID})
	eventually.True(t, "the ack to empty the outbox", func() bool { return h.runsOf(t) == 0 })
}

// runsOf counts the outbox's results.
func (h *harness) runsOf(t *testing.T) int {
	t.Helper()
	p, err := h.store.Outbox()
	if err != nil {
		t.Fatal(err)
	}
	return len(p)
}
