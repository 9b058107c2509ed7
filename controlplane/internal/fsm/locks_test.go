package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// TestLocks: a lock refuses the admission of what it matches (rejected
// locked, no key bound), stops what waits (canceled locked, with a receipt)
// and what runs (its dispatch marked for the node), keeps a locked node
// from being given work, and once deleted or expired lets queued intents
// run and a retry with the same key be admitted.
func TestLocks(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	b.add(MsgPutTool, PutTool{Name: "other", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	for _, e := range b.logs {
		f.Apply(e)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	apply(t, f, b, MsgAdmit, admit("running", "k1", "p1", at(0)))
	apply(t, f, b, MsgAdmit, admit("queued", "k2", "p2", at(0)))
	apply(t, f, b, MsgAdmit, admit("pending", "k3", "p3", at(0), func(a *Admit) { a.Decision.ApprovalRequired = true }))
	apply(t, f, b, MsgAdmit, admit("globex", "k4", "p4", at(0), func(a *Admit) { a.Tenant = "globex"; a.Decision.ApprovalRequired = true }))

	if r := apply(t, f, b, MsgPutLock, PutLock{At: at(1), Lock: Lock{ID: "lk1", Reason: "r"}}); r.Err == nil || r.Err.Code != protocol.CodeMalformed {
		t.Fatalf("a lock that matches everything: %+v, want malformed", r)
	}
	size := l.Size()
	if r := apply(t, f, b, MsgPutLock, PutLock{At: at(1), Lock: Lock{ID: "lk1", Tenant: "acme", Reason: "runaway agent", By: "admin"}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := apply(t, f, b, MsgPutLock, PutLock{At: at(1), Lock: Lock{ID: "lk1", Tool: "x", Reason: "r"}}); r.Err == nil || r.Err.Code != protocol.CodeLockExists {
		t.Fatalf("a taken id: %+v", r)
	}
	for id, want := range map[string]string{"queued": StateCanceled, "pending": StateCanceled, "globex": StatePendingApproval, "running": StateDispatched} {
		in := state(t, f, id)
		if in.State != want {
			t.Errorf("%s is %s, want %s", id, in.State, want)
		}
		if want == StateCanceled && (in.Error == nil || in.Error.Code != protocol.CodeLocked) {
			t.Errorf("%s: error %+v, want locked", id, in.Error)
		}
	}
	if grew := l.Size() - size; grew != 2 {
		t.Fatalf("%d receipts, want one for each stopped waiting intent", grew)
	}
	for _, d := range f.Reader().OpenDispatches("n1") {
		if d.IntentID == "running" && (!d.Cancel || d.CancelBy != "lock lk1") {
			t.Fatalf("the running intent's dispatch is not marked: %+v", d)
		}
	}
	// Admission: refused, binding nothing; another tenant is admitted.
	apply(t, f, b, MsgAdmit, admit("new", "k5", "p5", at(2)))
	if in := state(t, f, "new"); in.State != StateRejected || in.Error == nil || in.Error.Code != protocol.CodeLocked || !in.Unbound {
		t.Fatalf("admitted under a lock: %+v", in)
	}
	apply(t, f, b, MsgAdmit, admit("g2", "k6", "p6", at(2), func(a *Admit) { a.Tenant = "globex" }))
	if s := state(t, f, "g2").State; s != StateQueued {
		t.Fatalf("another tenant's intent is %s, want queued behind the running one", s)
	}
	// The node's canceled result ends the running intent; g2 gets the slot.
	apply(t, f, b, MsgResult, result(state(t, f, "running"), protocol.StatusCanceled, at(3)))
	if s := state(t, f, "running").State; s != StateCanceled {
		t.Fatalf("running is %s after its node's report", s)
	}
	if s := state(t, f, "g2").State; s != StateDispatched {
		t.Fatalf("g2 is %s, want dispatched", s)
	}
	// Snapshot here (a lock in force, a dispatch marked canceled), restore
	// into a fresh replica, apply the rest of the log to both: equal states.
	mid := len(b.logs)
	// A node lock: nothing is dispatched to n1 while it holds.
	apply(t, f, b, MsgResult, result(state(t, f, "g2"), protocol.StatusOK, at(4)))
	if r := apply(t, f, b, MsgDeleteLock, DeleteLock{At: at(5), ID: "lk1"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := apply(t, f, b, MsgDeleteLock, DeleteLock{At: at(5), ID: "lk1"}); r.Err == nil || r.Err.Code != protocol.CodeNotFound {
		t.Fatalf("deleting it again: %+v", r)
	}
	apply(t, f, b, MsgPutLock, PutLock{At: at(6), Lock: Lock{ID: "lk2", Node: "n1", Reason: "maintenance", ExpiresAt: at(60)}})
	apply(t, f, b, MsgAdmit, admit("new", "k5", "p5", at(7))) // the same attempt again: still refused, not a repeat
	apply(t, f, b, MsgAdmit, admit("retry", "k5", "p5", at(7)))
	if in := state(t, f, "retry"); in.State != StateQueued {
		t.Fatalf("a retry with the refused attempt's key: %+v, want admitted and queued (n1 is locked)", in)
	}
	if got := f.Reader().Locks(); len(got) != 1 || got[0].ID != "lk2" || !got[0].CreatedAt.Equal(at(6)) {
		t.Fatalf("Locks: %+v", got)
	}
	// The lock expires at a tick: the queued intent is dispatched.
	apply(t, f, b, MsgTick, Tick{At: at(61)})
	if in := state(t, f, "retry"); in.State != StateDispatched {
		t.Fatalf("after the lock expired: %s, want dispatched", in.State)
	}
	if got := f.Reader().Locks(); len(got) != 0 {
		t.Fatalf("Locks after expiry: %+v", got)
	}
	want, _ := f.Encode()
	if got, _ := replayWith(t, memLedger(t), b).Encode(); !bytes.Equal(got, want) {
		t.Fatal("replaying the log gives another state")
	}
	half := withLedger(t, memLedger(t))
	for _, e := range b.logs[:mid] {
		half.Apply(e)
	}
	restored := restoreInto(t, half, withLedger(t, memLedger(t)))
	for _, e := range b.logs[mid:] {
		restored.Apply(e)
	}
	if got, _ := restored.Encode(); !bytes.Equal(got, want) {
		t.Fatal("snapshot, restore and the rest of the log give another state")
	}
}
