package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/protocol"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// logBuilder makes a log of encoded commands, as Raft would deliver them.
type logBuilder struct {
	t    testing.TB
	logs []*raft.Log
}

func (b *logBuilder) add(mt MsgType, cmd any) *raft.Log {
	b.t.Helper()
	data, err := Encode(mt, cmd)
	if err != nil {
		b.t.Fatal(err)
	}
	l := &raft.Log{Index: uint64(len(b.logs) + 1), Type: raft.LogCommand, Data: data}
	b.logs = append(b.logs, l)
	return l
}

func newFSM(t testing.TB) *FSM {
	t.Helper()
	f, err := New(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func admit(id, key, payload string, at time.Time, mod ...func(*Admit)) *Admit {
	a := &Admit{
		At: at, Intent: []byte(`{"id":"` + id + `"}`), ID: id, Tenant: "acme", Principal: "bot",
		RunID: "run-1", Tool: "echo", PayloadHash: protocol.HashBytes([]byte(payload)),
		IdempotencyKey: key, ExpiresAt: at.Add(10 * time.Minute),
		Decision: Decision{Allow: true, PolicyHash: "sha256:p", Policies: []string{"p0"}},
	}
	for _, m := range mod {
		m(a)
	}
	return a
}

func apply(t testing.TB, f *FSM, b *logBuilder, mt MsgType, cmd any) Result {
	t.Helper()
	res, _ := f.Apply(b.add(mt, cmd)).(Result)
	return res
}

func state(t testing.TB, f *FSM, id string) Intent {
	t.Helper()
	in, ok := f.Reader().Intent(id)
	if !ok {
		t.Fatalf("intent %s not found", id)
	}
	return in
}

func TestIdempotency(t *testing.T) {
	f, b := fleetFSM(t)
	if r := apply(t, f, b, MsgAdmit, admit("int-1", "k1", "p", t0)); r.Err != nil || r.IntentID != "int-1" || r.Duplicate {
		t.Fatalf("first admission: %+v", r)
	}
	r := apply(t, f, b, MsgAdmit, admit("int-2", "k1", "p", t0.Add(time.Second)))
	if r.Err != nil || r.IntentID != "int-1" || !r.Duplicate {
		t.Fatalf("same key, same payload: got %+v, want the original intent", r)
	}
	if _, ok := f.Reader().Intent("int-2"); ok {
		t.Fatal("a repeat created a second intent")
	}
	r = apply(t, f, b, MsgAdmit, admit("int-3", "k1", "other", t0.Add(time.Second)))
	if r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
		t.Fatalf("same key, other payload: got %+v, want idempotency_conflict", r)
	}
	r = apply(t, f, b, MsgAdmit, admit("int-1", "k2", "p", t0.Add(time.Second)))
	if r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
		t.Fatalf("intent id reused under another key: got %+v, want idempotency_conflict", r)
	}
	r = apply(t, f, b, MsgAdmit, admit("int-4", "k1", "p", t0, func(a *Admit) { a.Tenant = "globex" }))
	if r.Err != nil || r.Duplicate {
		t.Fatalf("same key in another tenant: got %+v, want a new intent", r)
	}
}

func TestBudgetExhaustedAtExactlyN(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 3})
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("int-%d", i)
		apply(t, f, b, MsgAdmit, admit(id, id, id, t0))
		in := state(t, f, id)
		want := StateDispatched
		if i >= 3 {
			want = StateRejected
		}
		if in.State != want {
			t.Errorf("intent %d: got %s, want %s", i, in.State, want)
		}
		if i >= 3 && (in.Error == nil || in.Error.Code != protocol.CodeBudgetExhausted) {
			t.Errorf("intent %d: got error %+v, want budget_exhausted", i, in.Error)
		}
	}
	// Another run has its own budget; a denied intent does not use budget.
	apply(t, f, b, MsgAdmit, admit("other-run", "o", "o", t0, func(a *Admit) { a.RunID = "run-2" }))
	if s := state(t, f, "other-run").State; s != StateDispatched {
		t.Errorf("another run: got %s, want dispatched", s)
	}
}

func TestDecisionsRecorded(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgAdmit, admit("denied", "k1", "p", t0, func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} }))
	apply(t, f, b, MsgAdmit, admit("invalid", "k2", "p", t0, func(a *Admit) {
		a.Decision = Decision{Error: &protocol.ErrorBody{Code: "params_invalid", Message: "msg is required"}}
	}))
	apply(t, f, b, MsgAdmit, admit("forbidden", "k3", "p", t0, func(a *Admit) {
		a.Decision = Decision{Error: &protocol.ErrorBody{Code: protocol.CodePolicyDenied, Message: "forbid p9"}, Policies: []string{"p9"}}
	}))
	apply(t, f, b, MsgAdmit, admit("pending", "k4", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	for id, want := range map[string]string{"denied": StateDenied, "invalid": StateRejected, "forbidden": StateDenied, "pending": StatePendingApproval} {
		if got := state(t, f, id).State; got != want {
			t.Errorf("%s: got %s, want %s", id, got, want)
		}
	}
}

func approve(intentID, nonce, decision string, at time.Time) *Approve {
	return &Approve{
		At: at, Approval: []byte(`{}`), ID: "apr-" + nonce, IntentID: intentID, Tenant: "acme",
		Approver: "alice", Decision: decision, Nonce: nonce, NonceExpiresAt: at.Add(5 * time.Minute),
		Hash: protocol.HashBytes([]byte(nonce)),
	}
}

func TestApprovals(t *testing.T) {
	f, b := fleetFSM(t)
	pending := func(a *Admit) { a.Decision.ApprovalRequired = true }
	apply(t, f, b, MsgAdmit, admit("a", "ka", "p", t0, pending))
	apply(t, f, b, MsgAdmit, admit("d", "kd", "p", t0, pending))
	apply(t, f, b, MsgAdmit, admit("n", "kn", "p", t0))

	if r := apply(t, f, b, MsgApprove, approve("a", "n1", protocol.DecisionApprove, t0.Add(time.Minute))); r.Err != nil {
		t.Fatalf("approve: %+v", r.Err)
	}
	if in := state(t, f, "a"); in.State != StateDispatched || in.Approval == nil || in.Approval.Approver != "alice" {
		t.Errorf("approved intent: %+v", in)
	}
	for name, c := range map[string]struct {
		cmd  *Approve
		want protocol.Code
	}{
		"nonce replayed on another intent": {approve("d", "n1", protocol.DecisionApprove, t0.Add(time.Minute)), protocol.CodeApprovalReplayed},
		"intent no longer pending":         {approve("a", "n2", protocol.DecisionApprove, t0.Add(time.Minute)), protocol.CodeNotPending},
		"intent never needed approval":     {approve("n", "n3", protocol.DecisionApprove, t0.Add(time.Minute)), protocol.CodeNotPending},
		"unknown intent":                   {approve("zz", "n4", protocol.DecisionApprove, t0.Add(time.Minute)), protocol.CodeNotFound},
		"approval expired": {func() *Approve {
			a := approve("d", "n5", "approve", t0.Add(time.Minute))
			a.NonceExpiresAt = t0
			return a
		}(), protocol.CodeApprovalExpired},
		"intent expired": {approve("d", "n6", protocol.DecisionApprove, t0.Add(11*time.Minute)), protocol.CodeApprovalExpired},
		"other tenant": {func() *Approve {
			a := approve("d", "n7", "approve", t0.Add(time.Minute))
			a.Tenant = "globex"
			return a
		}(), protocol.CodeApprovalMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			// Each case starts from the same state: a copy of the log so far.
			g := replay(t, b.logs)
			gb := &logBuilder{t: t, logs: append([]*raft.Log(nil), b.logs...)}
			r := apply(t, g, gb, MsgApprove, c.cmd)
			if r.Err == nil || r.Err.Code != c.want {
				t.Fatalf("got %+v, want %s", r, c.want)
			}
			before, _ := replay(t, b.logs).Encode()
			// Refused commands change nothing but the index and the clock.
			after := state(t, g, "d")
			if after.State != StatePendingApproval || g.Reader().NonceConsumed(c.cmd.Nonce) != (c.cmd.Nonce == "n1") {
				t.Errorf("refused approval changed state: %+v (before %d bytes)", after, len(before))
			}
		})
	}
	apply(t, f, b, MsgApprove, approve("d", "n8", protocol.DecisionDeny, t0.Add(time.Minute)))
	if s := state(t, f, "d").State; s != StateDenied {
		t.Errorf("denied: got %s", s)
	}
}

func TestTickExpiresAndPrunes(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 1})
	apply(t, f, b, MsgAdmit, admit("p", "kp", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	apply(t, f, b, MsgApprove, approve("p", "nonce", protocol.DecisionDeny, t0.Add(time.Minute)))
	apply(t, f, b, MsgAdmit, admit("w", "kw", "w", t0, func(a *Admit) { a.Decision.ApprovalRequired = true; a.RunID = "run-2" }))

	apply(t, f, b, MsgTick, Tick{At: t0.Add(10*time.Minute - time.Nanosecond)})
	if s := state(t, f, "w").State; s != StatePendingApproval {
		t.Fatalf("before expiry: got %s", s)
	}
	_, ch, _ := f.Reader().WatchIntent("w")
	apply(t, f, b, MsgTick, Tick{At: t0.Add(10 * time.Minute)})
	select {
	case <-ch:
	default:
		t.Error("expiry did not wake the intent's watcher")
	}
	if in := state(t, f, "w"); in.State != StateExpired || in.Error.Code != protocol.CodeExpired {
		t.Fatalf("at expiry: got %+v", in)
	}
	if !f.Reader().NonceConsumed("nonce") {
		t.Fatal("nonce forgotten too early")
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(time.Minute + 15*time.Minute)})
	if f.Reader().NonceConsumed("nonce") {
		t.Error("nonce kept past its approval's expiry plus margin")
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(24*time.Hour - time.Second)})
	if _, ok := f.Reader().Intent("p"); !ok {
		t.Fatal("intent pruned before the retention")
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(24 * time.Hour)})
	if _, ok := f.Reader().Intent("p"); ok {
		t.Error("final intent kept past the retention")
	}
	enc, _ := f.Encode()
	if bytes.Contains(enc, []byte(`"kp"`)) || bytes.Contains(enc, []byte(`run-1`)) {
		t.Errorf("idempotency entry or run counter kept past the retention: %s", enc)
	}
	// With the run forgotten, its budget starts again.
	apply(t, f, b, MsgAdmit, admit("again", "kx", "x", t0.Add(25*time.Hour)))
	if s := state(t, f, "again").State; s != StateDispatched {
		t.Errorf("after retention: got %s", s)
	}
}

func TestClockNeverGoesBack(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgTick, Tick{At: t0.Add(time.Hour)})
	apply(t, f, b, MsgAdmit, admit("late", "k", "p", t0)) // a new leader's clock is behind
	if in := state(t, f, "late"); !in.AdmittedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("admitted at %s, want the FSM clock %s", in.AdmittedAt, t0.Add(time.Hour))
	}
}

// replay applies logs to a fresh FSM.
func replay(t testing.TB, logs []*raft.Log) *FSM {
	t.Helper()
	f := newFSM(t)
	for _, l := range logs {
		f.Apply(l)
	}
	return f
}

// TestReplayIsByteIdentical: a whole log replayed into fresh FSMs gives the same
// bytes, and so does restoring a snapshot taken midway and applying the rest.
func TestReplayIsByteIdentical(t *testing.T) {
	f, b := fleetFSM(t)
	step := func(mt MsgType, cmd any) { f.Apply(b.add(mt, cmd)) }
	step(MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 50})
	step(MsgPutIntentKey, PutIntentKey{Tenant: "acme", KeyID: "orch-1", Sealed: []byte("sealed")})
	step(MsgPutApproverKey, PutApproverKey{Tenant: "acme", KeyID: "alice", Public: make([]byte, 32), Approver: "alice"})
	step(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
	step(MsgPutPolicy, PutPolicy{Text: "permit(principal, action, resource);", Hash: "sha256:p"})
	var mid int
	for i := 0; i < 200; i++ {
		at := t0.Add(time.Duration(i) * 7 * time.Minute)
		id := fmt.Sprintf("int-%03d", i)
		step(MsgAdmit, admit(id, fmt.Sprintf("k%d", i%150), fmt.Sprint(i%3), at, func(a *Admit) {
			a.RunID = fmt.Sprintf("run-%d", i%7)
			a.Decision.ApprovalRequired = i%4 == 0
		}))
		if i%4 == 0 {
			step(MsgApprove, approve(id, fmt.Sprintf("nonce-%d", i%20), []string{"approve", "deny"}[i%8/4], at.Add(time.Minute)))
		}
		if i%10 == 9 {
			step(MsgTick, Tick{At: at.Add(3 * time.Minute)})
		}
		if i == 100 {
			mid = len(b.logs)
		}
	}
	want, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 3; run++ {
		got, _ := replay(t, b.logs).Encode()
		if !bytes.Equal(got, want) {
			t.Fatalf("replay %d differs from the original state", run)
		}
	}
	// Snapshot midway, restore into a fresh FSM, apply the rest.
	half := replay(t, b.logs[:mid])
	restored := restoreInto(t, half, newFSM(t))
	for _, l := range b.logs[mid:] {
		restored.Apply(l)
	}
	got, _ := restored.Encode()
	if !bytes.Equal(got, want) {
		t.Fatal("snapshot + restore + the rest of the log differs from replaying the log")
	}
	if bytes.Contains(want, []byte("secret")) {
		t.Error("state holds a plaintext secret")
	}
}

func TestCorruptEntryPanics(t *testing.T) {
	for name, data := range map[string][]byte{
		"unknown type": {0xEE, '{', '}'},
		"bad json":     append([]byte{byte(MsgAdmit)}, "{"...),
		"bad binary":   {byte(MsgAdmitBinary), 0x80},
		"empty":        {},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("a corrupt entry was applied without a panic")
				}
			}()
			newFSM(t).Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		})
	}
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

// restoreInto snapshots from, persists the snapshot and restores it into
// into, as a replica catching up from a snapshot does; it returns into.
func restoreInto(t testing.TB, from, into *FSM) *FSM {
	t.Helper()
	snap, err := from.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if err := into.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	return into
}

// TestRejectionDoesNotBindKey: an intent rejected before any decision leaves
// its idempotency key free for a corrected retry; a policy decision binds it.
func TestRejectionDoesNotBindKey(t *testing.T) {
	f, b := fleetFSM(t)
	invalid := func(a *Admit) {
		a.Decision = Decision{Error: &protocol.ErrorBody{Code: "params_invalid", Message: "msg is required"}}
	}
	apply(t, f, b, MsgAdmit, admit("bad", "k", "p", t0, invalid))
	r := apply(t, f, b, MsgAdmit, admit("good", "k", "p", t0.Add(time.Second)))
	if r.Err != nil || r.Duplicate || r.IntentID != "good" {
		t.Fatalf("retry after a rejection: got %+v, want a new intent", r)
	}
	if s := state(t, f, "bad").State; s != StateRejected {
		t.Errorf("rejected attempt: got %s", s)
	}
	if r := apply(t, f, b, MsgAdmit, admit("bad", "k2", "p", t0, invalid)); r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
		t.Errorf("a rejected attempt's id reused: got %+v, want idempotency_conflict", r)
	}
	denied := func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} }
	apply(t, f, b, MsgAdmit, admit("no", "kd", "p", t0, denied))
	if r := apply(t, f, b, MsgAdmit, admit("no-again", "kd", "p", t0.Add(time.Second))); !r.Duplicate || r.IntentID != "no" {
		t.Errorf("retry after a denial: got %+v, want the denied intent", r)
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(24*time.Hour + time.Second)})
	if _, ok := f.Reader().Intent("bad"); ok {
		t.Error("rejected attempt kept past the retention")
	}
	got, _ := f.Encode()
	want, _ := replay(t, b.logs).Encode()
	if string(got) != string(want) {
		t.Error("replay differs")
	}
}

// TestWatchersOnlyForWaitingIntents: looking up unknown or final intents
// leaves no watcher behind.
func TestWatchersOnlyForWaitingIntents(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgAdmit, admit("done", "k", "p", t0, func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} }))
	for i := 0; i < 1000; i++ {
		f.Reader().WatchIntent(fmt.Sprintf("nope-%d", i))
		f.Reader().WatchIntent("done")
	}
	f.watch.mu.Lock()
	n := len(f.watch.m)
	f.watch.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d watchers left for intents that will never change", n)
	}
}

// TestAdmissionAfterExpiryByTheLogsClock: an intent the log's clock already
// sees as expired is recorded as expired, never released to run; and the same
// refused attempt sent again is a repeat, not a conflict.
func TestAdmissionAfterExpiryByTheLogsClock(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgTick, Tick{At: t0.Add(time.Hour)})
	late := admit("late", "k", "p", t0) // expires at t0+10m, behind the clock
	apply(t, f, b, MsgAdmit, late)
	if in := state(t, f, "late"); in.State != StateExpired || in.Error.Code != protocol.CodeExpired {
		t.Fatalf("got %+v, want expired", in)
	}
	if r := apply(t, f, b, MsgAdmit, late); !r.Duplicate || r.IntentID != "late" || r.Err != nil {
		t.Fatalf("the same attempt again: got %+v, want a repeat", r)
	}
	if r := apply(t, f, b, MsgAdmit, admit("fresh", "k", "p", t0.Add(time.Hour), func(a *Admit) {
		a.ExpiresAt = t0.Add(time.Hour + 5*time.Minute)
	})); r.Err != nil || r.Duplicate {
		t.Fatalf("a corrected retry with the same key: got %+v", r)
	}
}
