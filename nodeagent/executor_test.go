package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

func TestValidDispatchRunsOnceAndResultVerifies(t *testing.T) {
	h := newHarness(t, 2)
	params := `{"msg":"hello, node"}`
	raw := sign(t, h.dispatch("echo", params), serverKey)
	if err := h.x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	r := h.outbox()["dsp-1"]
	if r == nil || r.Status != protocol.StatusOK || r.Output != params || r.Sandbox != "wasm" || r.ExitCode != 0 ||
		r.IntentID != "int-1" || r.OutputHash != protocol.HashBytes([]byte(params)) || r.OutputBytes != int64(len(params)) || r.Truncated {
		t.Fatalf("got result %+v, want ok with the params echoed by the wasm tier", r)
	}
	if r.StartedAt != "2026-11-22T10:00:00.000Z" || r.FinishedAt != r.StartedAt {
		t.Errorf("got times %s..%s, want RFC 3339 UTC with milliseconds from the agent's clock", r.StartedAt, r.FinishedAt)
	}
	if len(h.notified) != 1 || h.notified[0] != "dsp-1" {
		t.Errorf("OnResult saw %v, want [dsp-1]", h.notified)
	}

	// The same dispatch pushed again, and the witness run pushed twice:
	// each runs once, and nothing new is recorded for the repeats.
	wraw := sign(t, h.dispatch("witness", h.witnessParams(false)), serverKey)
	for range 2 {
		for _, b := range [][]byte{raw, wraw} {
			if err := h.x.Handle(context.Background(), b, servers); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("witness ran %d times, want 1", n)
	}
	out := h.outbox()
	if len(out) != 2 || out["dsp-2"].Status != protocol.StatusOK || out["dsp-2"].Sandbox != "process" {
		t.Fatalf("got outbox %v, want two ok results", out)
	}
	// After the server acks, a re-push still does not run it again.
	h.store.Ack("dsp-2")
	if err := h.x.Handle(context.Background(), wraw, servers); err != nil || h.runs() != 1 || len(h.outbox()) != 1 {
		t.Fatalf("re-push after ack: err %v, %d runs, outbox %v", err, h.runs(), h.outbox())
	}
}

func TestForgedDispatchesAreRefusedAndRunNothing(t *testing.T) {
	h := newHarness(t, 2)
	wp := h.witnessParams(false)
	// One real run, whose nonce a later dispatch replays.
	first := h.dispatch("witness", wp)
	if err := h.x.Handle(context.Background(), sign(t, first, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		raw  func() []byte
		want protocol.Code
	}{
		{"addressed to another node", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.Node = "node-2" }), serverKey)
		}, protocol.CodeWrongNode},
		{"replayed nonce", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.Nonce = first.Nonce }), serverKey)
		}, protocol.CodeReplayedNonce},
		{"expired", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) {
				d.IssuedAt, d.ExpiresAt = protocol.FormatTime(h.clock.Now().Add(-time.Minute)), protocol.FormatTime(h.clock.Now())
			}), serverKey)
		}, protocol.CodeExpired},
		{"not yet valid", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) {
				d.IssuedAt, d.ExpiresAt = protocol.FormatTime(h.clock.Now().Add(time.Hour)), protocol.FormatTime(h.clock.Now().Add(61*time.Minute))
			}), serverKey)
		}, protocol.CodeNotYetValid},
		{"ttl too long", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.ExpiresAt = protocol.FormatTime(h.clock.Now().Add(time.Hour)) }), serverKey)
		}, protocol.CodeTTLTooLong},
		{"unknown manifest hash", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.ToolManifestHash = protocol.HashBytes([]byte("{}")) }), serverKey)
		}, protocol.CodeManifestMismatch},
		{"another tier than the manifest's", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.Sandbox = "bwrap" }), serverKey)
		}, protocol.CodeManifestMismatch},
		{"unknown tool", func() []byte { return sign(t, h.dispatch("rm_rf", `{}`), serverKey) }, protocol.CodeUnknownTool},
		{"tier not probed here", func() []byte { return sign(t, h.dispatch("contained", wp), serverKey) }, protocol.CodeTierUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := c.raw()
			d, err := protocol.DecodeDispatch(raw, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.x.Handle(context.Background(), raw, servers); err != nil {
				t.Fatal(err)
			}
			r := h.outbox()[d.ID]
			if r == nil || r.Status != protocol.StatusRefused || !strings.HasPrefix(r.Error, string(c.want)+": ") ||
				r.Sandbox != "" || r.ExitCode != -1 || r.Output != "" || r.OutputHash != protocol.HashBytes(nil) || r.IntentID != d.IntentID {
				t.Fatalf("got result %+v, want refused with %s", r, c.want)
			}
			if n := h.runs(); n != 1 {
				t.Fatalf("the witness ran %d times, want only the one real run", n)
			}
		})
	}
	// A forged dispatch does not burn the nonce of a real one: the real
	// dispatch that a forgery copied the nonce of still runs.
	real := h.dispatch("witness", wp)
	forged := *real
	forged.ID = "dsp-forged"
	if err := h.x.Handle(context.Background(), sign(t, &forged, otherKey), servers); !errors.Is(err, ErrUnverified) {
		t.Fatalf("forged dispatch: got %v, want ErrUnverified", err)
	}
	if err := h.x.Handle(context.Background(), sign(t, real, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if r := h.outbox()[real.ID]; r == nil || r.Status != protocol.StatusOK || h.runs() != 2 {
		t.Fatalf("the real dispatch after a forgery with its nonce: %+v, %d runs; want ok and 2 runs", r, h.runs())
	}
}

// TestUnverifiedDispatchesAreRejectedAndRecordNothing: a dispatch that is
// not exactly what a trusted server signed is answered with ErrUnverified
// (a reject frame), runs nothing and leaves nothing under the id it claims.
func TestUnverifiedDispatchesAreRejectedAndRecordNothing(t *testing.T) {
	h := newHarness(t, 1)
	wp := h.witnessParams(false)
	for _, c := range []struct {
		name string
		raw  func() []byte
		want protocol.Code
	}{
		{"signed by an untrusted key", func() []byte { return sign(t, h.dispatch("witness", wp), otherKey) }, protocol.CodeBadSignature},
		{"unknown server key id", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.KeyID = "server-9" }), serverKey)
		}, protocol.CodeUnknownKey},
		{"tampered params", func() []byte {
			raw := string(sign(t, h.dispatch("witness", wp), serverKey))
			return []byte(strings.Replace(raw, "witness.log", "witness.lug", 1))
		}, protocol.CodeBadSignature},
		{"params signed under another payload hash", func() []byte {
			return sign(t, h.dispatch("witness", wp, func(d *protocol.Dispatch) { d.Params = jsontext.Value(`{"file":"/tmp/x"}`) }), serverKey)
		}, protocol.CodePayloadHashMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := c.raw()
			d, err := protocol.DecodeDispatch(raw, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = h.x.Handle(context.Background(), raw, servers)
			if !errors.Is(err, ErrUnverified) || protocol.CodeOf(err) != c.want {
				t.Fatalf("Handle: got %v, want ErrUnverified with %s", err, c.want)
			}
			if known, err := h.store.Known(d.ID); err != nil || known {
				t.Fatalf("the store knows the claimed id %s after a forgery (err %v)", d.ID, err)
			}
			if r := h.outbox()[d.ID]; r != nil || h.runs() != 0 {
				t.Fatalf("a forgery left result %+v and %d runs", r, h.runs())
			}
		})
	}
}

// TestForgedDispatchWithRealIDDoesNotPreemptIt: dispatch ids are
// predictable, so a forgery may carry the id of a real dispatch not yet
// delivered; the real one, arriving next, must run.
func TestForgedDispatchWithRealIDDoesNotPreemptIt(t *testing.T) {
	h := newHarness(t, 1)
	wp := h.witnessParams(false)
	real := h.dispatch("witness", wp)
	for _, forged := range [][]byte{
		sign(t, real, otherKey),
		[]byte(strings.Replace(string(sign(t, real, serverKey)), "witness.log", "witness.lug", 1)),
	} {
		if err := h.x.Handle(context.Background(), forged, servers); !errors.Is(err, ErrUnverified) {
			t.Fatalf("forged copy of %s: got %v, want ErrUnverified", real.ID, err)
		}
	}
	if err := h.x.Handle(context.Background(), sign(t, real, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if r := h.outbox()[real.ID]; r == nil || r.Status != protocol.StatusOK || h.runs() != 1 {
		t.Fatalf("the real dispatch after forgeries with its id: %+v, %d runs; want ok and 1 run", r, h.runs())
	}
}

func TestUndecodableDispatchIsAnError(t *testing.T) {
	h := newHarness(t, 1)
	for _, raw := range []string{`not json`, `{"type":"writ.dispatch/v1"}`, `{}`} {
		err := h.x.Handle(context.Background(), []byte(raw), servers)
		if !errors.Is(err, ErrUndecodable) || protocol.CodeOf(err) != protocol.CodeMalformed {
			t.Errorf("Handle(%s): got %v, want a malformed error", raw, err)
		}
	}
	if len(h.outbox()) != 0 {
		t.Fatal("an undecodable dispatch left a result")
	}
}

func TestDispatchLimitsTightenOnly(t *testing.T) {
	h := newHarness(t, 1)
	params := `{"msg":"more than four bytes"}`
	raw := sign(t, h.dispatch("echo", params, func(d *protocol.Dispatch) { d.Limits.OutputBytes = 4 }), serverKey)
	if err := h.x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	r := h.outbox()["dsp-1"]
	if r.Status != protocol.StatusOutputLimit || !r.Truncated || r.Output != params[:4] || r.OutputHash == protocol.HashBytes([]byte(params[:4])) {
		t.Fatalf("got %+v, want output_limit after 4 bytes with the hash of more", r)
	}

	m := sandbox.DefaultLimits()
	got := tighten(m, protocol.Limits{TimeoutMS: 10, MemoryBytes: 1 << 40, OutputBytes: 100, CPUMS: 1500, Pids: 0})
	want := m
	want.TimeoutMS, want.OutputBytes, want.CPUSeconds = 10, 100, 2
	if got != want {
		t.Fatalf("tighten: got %+v, want %+v (looser values ignored)", got, want)
	}
}

// TestResultCaptured: the result commits to the captured output by hash
// and size and carries none of it; the bytes kept are returned to be sent
// beside it, cut at MaxResultOutput on a rune boundary when they are text.
func TestResultCaptured(t *testing.T) {
	for name, c := range map[string]struct {
		out     []byte
		written int64
		want    []byte
		trunc   bool
	}{
		"text":        {[]byte("héllo"), 6, []byte("héllo"), false},
		"binary":      {[]byte{0xff, 0}, 2, []byte{0xff, 0}, false},
		"cut by tier": {[]byte("abc"), 10, []byte("abc"), true},
		"too long":    {[]byte(strings.Repeat("é", MaxResultOutput)), 2 * MaxResultOutput, []byte(strings.Repeat("é", MaxResultOutput/2)), true},
		"empty":       {nil, 0, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &protocol.Result{Type: protocol.ResultTypeV2}
			full := protocol.HashBytes(append(c.out, make([]byte, c.written-int64(len(c.out)))...))
			got := fillFromOutcome(r, sandbox.Outcome{Status: sandbox.StatusOK, Output: c.out, OutputBytes: c.written, Tier: "wasm", OutputHash: full})
			if string(got) != string(c.want) || r.Truncated != c.trunc || r.OutputBytes != c.written || r.OutputHash != full {
				t.Fatalf("got captured %.20q truncated %v bytes %d, want %.20q %v %d", got, r.Truncated, r.OutputBytes, c.want, c.trunc, c.written)
			}
			if r.Output != "" || r.OutputEncoding != "" {
				t.Fatalf("got output %.20q in the result, want none", r.Output)
			}
			if err := r.CheckCaptured(got); err != nil {
				t.Fatalf("captured output does not match the result: %v", err)
			}
		})
	}
}

// TestResultSaysWhy: a run that did not end well carries the tier's reason
// in the result's error — a tool that could not be started is not only
// "status error" — and a refusal its code.
func TestResultSaysWhy(t *testing.T) {
	for _, c := range []struct {
		out             sandbox.Outcome
		status, wantErr string
	}{
		{sandbox.Outcome{Status: sandbox.StatusOK, Reason: "ignored"}, protocol.StatusOK, ""},
		{sandbox.Outcome{Status: sandbox.StatusError, ExitCode: 2}, protocol.StatusError, ""},
		{sandbox.Outcome{Status: sandbox.StatusOutputLimit, Reason: "output above 10 bytes"}, protocol.StatusOutputLimit, "output_limit: output above 10 bytes"},
		{sandbox.Outcome{Status: sandbox.StatusError, ExitCode: -1, Reason: "fork/exec: resource temporarily unavailable"}, protocol.StatusError, "error: fork/exec: resource temporarily unavailable"},
		{sandbox.Outcome{Status: sandbox.StatusTimeout, ExitCode: -1, Reason: "wall"}, protocol.StatusTimeout, "timeout: wall"},
		{sandbox.Outcome{Status: sandbox.StatusRefused, Reason: "no such file"}, protocol.StatusRefused, "sandbox_refused: no such file"},
	} {
		r := &protocol.Result{}
		fillFromOutcome(r, c.out)
		if r.Status != c.status || r.Error != c.wantErr {
			t.Errorf("%+v: status %q error %q, want %q %q", c.out, r.Status, r.Error, c.status, c.wantErr)
		}
	}
}

func TestConcurrencyLimitHolds(t *testing.T) {
	h := newHarness(t, 2)
	var wg sync.WaitGroup
	for range 5 {
		raw := sign(t, h.dispatch("witness", h.witnessParams(true)), serverKey)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.x.Handle(context.Background(), raw, servers); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, "two runs to start", func() bool { return h.runs() >= 2 })
	time.Sleep(100 * time.Millisecond) // room for a third to start, were the limit broken
	if n, in := h.runs(), h.x.InFlight(); n != 2 || in != 2 {
		t.Fatalf("with concurrency 2: %d runs started, %d in flight; want 2 and 2", n, in)
	}
	writeFiles(t, filepath.Dir(h.release), map[string]string{"release": ""})
	wg.Wait()
	if n, out := h.runs(), h.outbox(); n != 5 || len(out) != 5 {
		t.Fatalf("after release: %d runs, %d results; want 5 and 5", n, len(out))
	}
}

func TestWaitingForASlotCanBeCancelled(t *testing.T) {
	h := newHarness(t, 1)
	busy := sign(t, h.dispatch("witness", h.witnessParams(true)), serverKey)
	done := make(chan error)
	go func() { done <- h.x.Handle(context.Background(), busy, servers) }()
	waitFor(t, "the first run", func() bool { return h.runs() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	wd := h.dispatch("witness", h.witnessParams(false))
	waiting := sign(t, wd, serverKey)
	// Cancelled once it waits for the slot, however long a loaded machine
	// takes it to get there, not after a fixed 20 ms.
	go func() {
		defer cancel()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			h.x.mu.Lock()
			handling := h.x.handling[wd.ID]
			h.x.mu.Unlock()
			if handling {
				return
			}
		}
	}()
	if err := h.x.Handle(ctx, waiting, servers); err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	writeFiles(t, filepath.Dir(h.release), map[string]string{"release": ""})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Nothing was recorded for the cancelled one: pushed again, it runs.
	if err := h.x.Handle(context.Background(), waiting, servers); err != nil || h.runs() != 2 {
		t.Fatalf("re-push of the cancelled dispatch: %v, %d runs; want it to run", err, h.runs())
	}
}

// TestAckBeforeCommit: a run's result is sent while it is being committed,
// so the server's ack can arrive before the commit is done. The ack must
// still empty the outbox once the commit is: a result left there would be
// sent again after every reconnection.
func TestAckBeforeCommit(t *testing.T) {
	h := newHarness(t, 1)
	var inOutbox []bool
	h.onResult = func(p store.Pending) {
		// The ack, at once: at this point the result is not yet committed.
		inOutbox = append(inOutbox, h.outbox()[p.DispatchID] != nil)
		if err := h.x.Ack(p.DispatchID); err != nil {
			t.Error(err)
		}
	}
	if err := h.x.Handle(context.Background(), sign(t, h.dispatch("echo", `{"msg":"hi"}`), serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if len(inOutbox) != 1 || inOutbox[0] {
		t.Fatalf("when sent, the result was in the outbox: %v (want sent before its commit)", inOutbox)
	}
	if out := h.outbox(); len(out) != 0 {
		t.Fatalf("outbox after an ack that came before the commit: %v, want empty", out)
	}
	if known, err := h.store.Known("dsp-1"); err != nil || !known {
		t.Fatalf("the acked dispatch must stay known (it never runs again): %v %v", known, err)
	}
	// An ack after the commit, and a repeated one, go straight to the store.
	h.onResult = nil
	if err := h.x.Handle(context.Background(), sign(t, h.dispatch("echo", `{"msg":"again"}`), serverKey), servers); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := h.x.Ack("dsp-2"); err != nil {
			t.Fatal(err)
		}
	}
	if out := h.outbox(); len(out) != 0 {
		t.Fatalf("outbox after acks: %v", out)
	}
}

// TestLeftoverWorkspacesRemoved: workspaces of runs a crash cut short are
// removed when the next executor starts; nothing else in WorkDir is.
func TestLeftoverWorkspacesRemoved(t *testing.T) {
	h := newHarness(t, 1)
	work := filepath.Join(h.dir, "work")
	for _, d := range []string{"run-123/sub", "keep"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, filepath.Join(work, "run-123", "sub"), map[string]string{"f": "x"})
	writeFiles(t, filepath.Join(work, "keep"), map[string]string{"f": "x"})
	h.newExecutor(1)
	if _, err := os.Stat(filepath.Join(work, "run-123")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a leftover workspace survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "keep", "f")); err != nil {
		t.Fatalf("a file that is not a workspace was removed: %v", err)
	}
}

// TestGatedTierReplayedNonce: in a gated tier (wasm) the run is prepared
// while its journal entry is committed; a nonce seen before still refuses
// the dispatch with replayed_nonce, and the tier refuses to start it.
func TestGatedTierReplayedNonce(t *testing.T) {
	h := newHarness(t, 2)
	if _, ok := h.tiers.Drivers["wasm"].(sandbox.Gated); !ok {
		t.Fatal("the wasm tier is not gated")
	}
	first := h.dispatch("echo", `{"msg":"first"}`)
	if err := h.x.Handle(context.Background(), sign(t, first, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	again := h.dispatch("echo", `{"msg":"again"}`, func(d *protocol.Dispatch) { d.Nonce = first.Nonce })
	if err := h.x.Handle(context.Background(), sign(t, again, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	out := h.outbox()
	if r := out[first.ID]; r == nil || r.Status != protocol.StatusOK || r.Output != `{"msg":"first"}` {
		t.Fatalf("first: %+v", r)
	}
	r := out[again.ID]
	if r == nil || r.Status != protocol.StatusRefused || !strings.HasPrefix(r.Error, string(protocol.CodeReplayedNonce)+":") || r.Output != "" {
		t.Fatalf("the replay: %+v, want refused with replayed_nonce and no output", r)
	}
	if known, _ := h.store.Known(again.ID); !known {
		t.Fatal("the refused replay is not remembered")
	}
	if in, err := h.store.Interrupted(); err != nil || len(in) != 0 {
		t.Fatalf("journal entries left started: %v %v", in, err)
	}
}

// TestUngatedTierWaitsForTheJournal: in a tier that cannot hold a prepared
// run (the process tier), the run's workspace is made while its journal
// entry commits, and the tool starts only once it is committed: a dispatch
// whose nonce was seen before is refused, its tool never starts, and its
// workspace is removed.
func TestUngatedTierWaitsForTheJournal(t *testing.T) {
	h := newHarness(t, 2)
	if _, ok := h.tiers.Drivers["process"].(sandbox.Gated); ok {
		t.Fatal("the process tier is gated; this test needs one that is not")
	}
	first := h.dispatch("witness", h.witnessParams(false))
	if err := h.x.Handle(context.Background(), sign(t, first, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("the first dispatch ran %d times, want 1", n)
	}
	again := h.dispatch("witness", h.witnessParams(false), func(d *protocol.Dispatch) { d.Nonce = first.Nonce })
	if err := h.x.Handle(context.Background(), sign(t, again, serverKey), servers); err != nil {
		t.Fatal(err)
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("the tool ran %d times; the replay's must not start", n)
	}
	out := h.outbox()
	if r := out[first.ID]; r == nil || r.Status != protocol.StatusOK {
		t.Fatalf("first: %+v", r)
	}
	if r := out[again.ID]; r == nil || r.Status != protocol.StatusRefused || !strings.HasPrefix(r.Error, string(protocol.CodeReplayedNonce)+":") {
		t.Fatalf("the replay: %+v, want refused with replayed_nonce", r)
	}
	entries, err := os.ReadDir(filepath.Join(h.dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), workspacePrefix) {
			t.Fatalf("workspace %s left after the runs", e.Name())
		}
	}
	if in, err := h.store.Interrupted(); err != nil || len(in) != 0 {
		t.Fatalf("journal entries left started: %v %v", in, err)
	}
}

// TestExpiredWhileWaitingForASlot: a dispatch checked on arrival that expires
// while it waits for a slot is checked again when it gets one, refused as
// expired, and never runs.
func TestExpiredWhileWaitingForASlot(t *testing.T) {
	h := newHarness(t, 1)
	busy := sign(t, h.dispatch("witness", h.witnessParams(true)), serverKey)
	done := make(chan error)
	go func() { done <- h.x.Handle(context.Background(), busy, servers) }()
	waitFor(t, "the first run", func() bool { return h.runs() == 1 })
	late := h.dispatch("witness", h.witnessParams(false))
	waited := make(chan error)
	go func() { waited <- h.x.Handle(context.Background(), sign(t, late, serverKey), servers) }()
	waitFor(t, "the second dispatch to wait for the slot", func() bool {
		h.x.mu.Lock()
		defer h.x.mu.Unlock()
		return h.x.handling[late.ID]
	})
	time.Sleep(20 * time.Millisecond) // past the check on arrival, into the wait
	h.clock.Add(2 * time.Minute)      // the dispatch expires meanwhile
	writeFiles(t, filepath.Dir(h.release), map[string]string{"release": ""})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	r := h.outbox()[late.ID]
	if r == nil || r.Status != protocol.StatusRefused || !strings.HasPrefix(r.Error, string(protocol.CodeExpired)) {
		t.Fatalf("got %+v, want refused as expired", r)
	}
	if n := h.runs(); n != 1 {
		t.Fatalf("%d runs, want only the first", n)
	}
}

// TestDiskBytesAboveAgentMaxIsRefused: a tool whose limits.disk_bytes (here
// the 64 MiB default) is above the agent's max_disk_bytes does not run.
func TestDiskBytesAboveAgentMaxIsRefused(t *testing.T) {
	h := newHarness(t, 1)
	h.x.cfg.MaxDiskBytes = 1 << 20
	raw := sign(t, h.dispatch("echo", `{"msg":"hi"}`), serverKey)
	if err := h.x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	r := h.outbox()["dsp-1"]
	if r == nil || r.Status != protocol.StatusRefused || !strings.Contains(r.Error, "max_disk_bytes") {
		t.Fatalf("got %+v, want refused for disk_bytes above max_disk_bytes", r)
	}
	h.x.cfg.MaxDiskBytes = 0 // the default, 1 GiB
	raw = sign(t, h.dispatch("echo", `{"msg":"hi"}`), serverKey)
	if err := h.x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	if r := h.outbox()["dsp-2"]; r == nil || r.Status != protocol.StatusOK {
		t.Fatalf("got %+v under the default max, want ok", r)
	}
}
