package fsm

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// outputFSM is fleetFSM with the given output bounds.
func outputFSM(t *testing.T, retention time.Duration, maxBytes int64) (*FSM, *logBuilder) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.OutputRetention, cfg.OutputMaxBytes = retention, maxBytes
	f, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := fleetLog(t)
	for _, l := range b.logs {
		if r, _ := f.Apply(l).(Result); r.Err != nil {
			t.Fatalf("fleet entry %d: %+v", l.Index, r.Err)
		}
	}
	return f, b
}

func putOutput(in Intent, data []byte, at time.Time) *PutOutput {
	return &PutOutput{At: at, DispatchID: in.Dispatch.ID, IntentID: in.ID, Node: in.Dispatch.Node,
		Hash: protocol.HashBytes(data), Output: data}
}

// runWithOutput admits an intent, stores an output for it and records its
// result, at the given time.
func runWithOutput(t *testing.T, f *FSM, b *logBuilder, id string, data []byte, at time.Time) {
	t.Helper()
	if r := apply(t, f, b, MsgAdmit, admit(id, id, "p", at)); r.Err != nil {
		t.Fatalf("admit %s: %+v", id, r.Err)
	}
	in := state(t, f, id)
	if r := apply(t, f, b, MsgPutOutput, putOutput(in, data, at)); r.Err != nil {
		t.Fatalf("output of %s: %+v", id, r.Err)
	}
	if r := apply(t, f, b, MsgResult, result(in, protocol.StatusOK, at)); r.Err != nil {
		t.Fatalf("result of %s: %+v", id, r.Err)
	}
}

func kept(f *FSM, ids ...string) string {
	var s string
	for _, id := range ids {
		if _, ok := f.Reader().IntentOutput(id); ok {
			s += id + " "
		}
	}
	return s
}

// TestOutputKeptBesideIntentNotReceipt: an output is stored by its own
// command, served by intent id, and never enters the intent's result or a
// receipt; only the dispatch's node may put it, and a resend after the
// result changes nothing.
func TestOutputKeptBesideIntentNotReceipt(t *testing.T) {
	f, b := outputFSM(t, time.Hour, 1<<20)
	secret := []byte("the tool's confidential output")
	runWithOutput(t, f, b, "i1", secret, t0)
	o, ok := f.Reader().IntentOutput("i1")
	in := state(t, f, "i1")
	if !ok || !bytes.Equal(o.Data, secret) || o.Hash != protocol.HashBytes(secret) || o.DispatchID != in.Dispatch.ID {
		t.Fatalf("got output %+v, %v; want the one stored", o, ok)
	}
	if bytes.Contains(in.Result, secret) {
		t.Fatal("the output is inside the intent's result")
	}
	if n, size := f.Reader().OutputUsage(); n != 1 || size != int64(len(secret)) {
		t.Fatalf("usage: got %d outputs, %d bytes; want 1, %d", n, size, len(secret))
	}
	if r := apply(t, f, b, MsgPutOutput, putOutput(in, []byte("other"), t0)); r.Err != nil || !r.Duplicate {
		t.Fatalf("an output after the result: got %+v, want a duplicate that changes nothing", r)
	}
	if o, _ := f.Reader().IntentOutput("i1"); !bytes.Equal(o.Data, secret) {
		t.Fatalf("an output after the result replaced the stored one: %q", o.Data)
	}
	apply(t, f, b, MsgAdmit, admit("i2", "k2", "p", t0))
	in2 := state(t, f, "i2")
	wrong := putOutput(in2, secret, t0)
	wrong.Node = "n9"
	if r := apply(t, f, b, MsgPutOutput, wrong); r.Err == nil || r.Err.Code != protocol.CodeWrongNode {
		t.Fatalf("an output from another node: got %+v, want wrong_node", r)
	}
	none := putOutput(in2, secret, t0)
	none.DispatchID = "nope"
	if r := apply(t, f, b, MsgPutOutput, none); r.Err == nil || r.Err.Code != protocol.CodeNotFound {
		t.Fatalf("an output for no dispatch: got %+v, want not_found", r)
	}
	if _, ok := f.Reader().IntentOutput("i2"); ok {
		t.Fatal("a refused output was stored")
	}
}

// TestOutputRetentionAndBudget: outputs go after output_retention by the
// FSM's clock, the oldest first when output_max_bytes is exceeded, one over
// the whole budget is never kept, and an output goes with its intent.
func TestOutputRetentionAndBudget(t *testing.T) {
	f, b := outputFSM(t, time.Hour, 100)
	for i := range 4 {
		runWithOutput(t, f, b, fmt.Sprintf("i%d", i), bytes.Repeat([]byte{'a' + byte(i)}, 30), t0.Add(time.Duration(i)*time.Minute))
	}
	// 4 × 30 bytes in a budget of 100: the oldest went.
	if got, want := kept(f, "i0", "i1", "i2", "i3"), "i1 i2 i3 "; got != want {
		t.Fatalf("after the budget: got %q, want %q", got, want)
	}
	if _, size := f.Reader().OutputUsage(); size != 90 {
		t.Fatalf("usage: got %d bytes, want 90", size)
	}
	runWithOutput(t, f, b, "big", bytes.Repeat([]byte{'z'}, 101), t0.Add(5*time.Minute))
	if got, want := kept(f, "big", "i1", "i2", "i3"), "i1 i2 i3 "; got != want {
		t.Fatalf("an output over the whole budget: got %q kept, want %q", got, want)
	}
	// i1 was stored at t0+1m: a tick at t0+1h1m drops it, not i2.
	apply(t, f, b, MsgTick, Tick{At: t0.Add(time.Hour + time.Minute)})
	if got, want := kept(f, "i1", "i2", "i3"), "i2 i3 "; got != want {
		t.Fatalf("after the retention of i1: got %q, want %q", got, want)
	}
	// A snapshot keeps the table and its bounds.
	g := restoreInto(t, f, func() *FSM { g, _ := outputFSM(t, time.Hour, 100); return g }())
	if got, want := kept(g, "i2", "i3"), "i2 i3 "; got != want {
		t.Fatalf("after a restore: got %q, want %q", got, want)
	}
	if n, size := g.Reader().OutputUsage(); n != 2 || size != 60 {
		t.Fatalf("usage after a restore: got %d outputs, %d bytes; want 2, 60", n, size)
	}
	apply(t, g, b, MsgTick, Tick{At: t0.Add(2 * time.Hour)})
	if got := kept(g, "i2", "i3"); got != "" {
		t.Fatalf("after every retention: got %q kept, want none", got)
	}
	if n, size := g.Reader().OutputUsage(); n != 0 || size != 0 {
		t.Fatalf("usage: got %d outputs, %d bytes; want none", n, size)
	}
}

// TestOutputGoesWithItsIntent: forgetting an intent (past the idempotency
// retention) forgets its output, and retention 0 keeps none.
func TestOutputGoesWithItsIntent(t *testing.T) {
	cfg := DefaultConfig()
	f, b := outputFSM(t, cfg.IdempotencyRetention, 1<<20)
	runWithOutput(t, f, b, "i1", []byte("out"), t0)
	f.forget(func() *Intent { f.mu.Lock(); defer f.mu.Unlock(); return f.state.Intents["i1"] }())
	if _, ok := f.Reader().IntentOutput("i1"); ok {
		t.Fatal("the output outlived its intent")
	}
	g, gb := outputFSM(t, 0, 1<<20)
	runWithOutput(t, g, gb, "i1", []byte("out"), t0)
	if _, ok := g.Reader().IntentOutput("i1"); ok {
		t.Fatal("retention 0 kept an output")
	}
}

// TestOutputReplayIsByteIdentical: replicas that apply the same log with
// outputs, evictions and ticks end with equal states.
func TestOutputReplayIsByteIdentical(t *testing.T) {
	f, b := outputFSM(t, time.Hour, 64)
	for i := range 6 {
		runWithOutput(t, f, b, fmt.Sprintf("i%d", i), bytes.Repeat([]byte{byte(i)}, 20), t0.Add(time.Duration(i)*20*time.Minute))
		apply(t, f, b, MsgTick, Tick{At: t0.Add(time.Duration(i)*20*time.Minute + time.Second)})
	}
	g, _ := outputFSM(t, time.Hour, 64)
	for _, l := range b.logs[len(fleetLog(t).logs):] {
		g.Apply(l)
	}
	a, _ := f.Encode()
	c, _ := g.Encode()
	if !bytes.Equal(a, c) {
		t.Fatal("replicas differ after the same log")
	}
	if n, _ := f.Reader().OutputUsage(); n == 0 || n == 6 {
		t.Fatalf("got %d outputs kept, want some evicted and some kept", n)
	}
}

func TestOutputConfigValidate(t *testing.T) {
	for name, c := range map[string]struct {
		retention time.Duration
		max       int64
		ok        bool
	}{
		"default":            {24 * time.Hour, DefaultOutputMaxBytes, true},
		"off":                {0, 0, true},
		"negative retention": {-time.Second, 1, false},
		"past idempotency":   {25 * time.Hour, 1, false},
		"negative budget":    {time.Hour, -1, false},
	} {
		cfg := DefaultConfig()
		cfg.OutputRetention, cfg.OutputMaxBytes = c.retention, c.max
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: got %v, want ok=%v", name, err, c.ok)
		}
	}
}
