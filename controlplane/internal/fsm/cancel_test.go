package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// TestCancel applies cancels to intents in every state: waiting ones end
// canceled with a receipt at once (and leave the queue), a dispatched one is
// marked for its node and ends canceled with the node's canceled result, a
// final one and another tenant's are left alone, and a repeat changes
// nothing. The state replays to the same bytes.
func TestCancel(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	for _, e := range b.logs {
		f.Apply(e)
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	apply(t, f, b, MsgAdmit, admit("running", "k1", "p1", at(0)))
	apply(t, f, b, MsgAdmit, admit("queued", "k2", "p2", at(0)))
	apply(t, f, b, MsgAdmit, admit("pending", "k3", "p3", at(0), func(a *Admit) { a.Decision.ApprovalRequired = true }))
	apply(t, f, b, MsgAdmit, admit("next", "k4", "p4", at(0)))
	if s := state(t, f, "queued").State; s != StateQueued {
		t.Fatalf("queued is %s", s)
	}
	if s := state(t, f, "pending").State; s != StatePendingApproval {
		t.Fatalf("pending is %s", s)
	}

	for _, c := range []struct {
		name, id, tenant string
		wantErr          protocol.Code
		dup              bool
		state            string
	}{
		{"another tenant's", "queued", "globex", protocol.CodeNotFound, false, StateQueued},
		{"unknown", "nope", "acme", protocol.CodeNotFound, false, ""},
		{"queued", "queued", "acme", "", false, StateCanceled},
		{"pending approval", "pending", "acme", "", false, StateCanceled},
		{"again", "pending", "acme", "", true, StateCanceled},
		{"dispatched", "running", "acme", "", false, StateDispatched},
		{"dispatched again", "running", "acme", "", true, StateDispatched},
	} {
		t.Run(c.name, func(t *testing.T) {
			size := l.Size()
			r := apply(t, f, b, MsgCancel, Cancel{At: at(1), Tenant: c.tenant, IntentID: c.id, By: "the admin"})
			switch {
			case c.wantErr != "" && (r.Err == nil || r.Err.Code != c.wantErr):
				t.Fatalf("got %+v, want %s", r, c.wantErr)
			case c.wantErr == "" && (r.Err != nil || r.Duplicate != c.dup):
				t.Fatalf("got %+v, want no error, duplicate %v", r, c.dup)
			}
			if c.state == "" {
				return
			}
			in := state(t, f, c.id)
			if in.State != c.state {
				t.Fatalf("state %s, want %s", in.State, c.state)
			}
			grew := l.Size() - size
			if c.state == StateCanceled && !c.dup {
				if grew != 1 || in.Error == nil || in.Error.Code != protocol.CodeCanceled {
					t.Fatalf("%d receipts appended, error %+v; want one, canceled", grew, in.Error)
				}
				if rc := receiptOf(t, l, in); rc.Outcome != protocol.OutcomeCanceled || string(rc.Result) != "null" || rc.Dispatch != nil {
					t.Fatalf("receipt %+v", rc)
				}
			} else if grew != 0 {
				t.Fatalf("%d receipts appended, want none", grew)
			}
		})
	}
	for _, d := range f.Reader().OpenDispatches("n1") {
		if d.IntentID == "running" && (!d.Cancel || d.CancelBy != "the admin") {
			t.Fatalf("the running intent's dispatch is not marked: %+v", d)
		}
		if d.IntentID == "queued" {
			t.Fatal("a canceled queued intent was dispatched")
		}
	}
	// The node's canceled result ends it; the slot goes to the next intent.
	running := state(t, f, "running")
	apply(t, f, b, MsgResult, result(running, protocol.StatusCanceled, at(2)))
	running = state(t, f, "running")
	if running.State != StateCanceled || running.Error == nil || running.Error.Code != protocol.CodeCanceled {
		t.Fatalf("after the node's result: %+v", running)
	}
	if rc := receiptOf(t, l, running); rc.Outcome != protocol.OutcomeCanceled || rc.Result.Kind() != '{' {
		t.Fatalf("receipt %+v, want canceled with the result", rc)
	}
	if next := state(t, f, "next"); next.State != StateDispatched {
		t.Fatalf("next is %s, want dispatched in the freed slot", next.State)
	}
	// A final intent: nothing changes.
	size := l.Size()
	if r := apply(t, f, b, MsgCancel, Cancel{At: at(3), Tenant: "acme", IntentID: "running", By: "x"}); r.Err != nil || !r.Duplicate {
		t.Fatalf("cancel of a final intent: %+v", r)
	}
	if l.Size() != size {
		t.Fatal("a cancel of a final intent appended a receipt")
	}
	want, _ := f.Encode()
	got, _ := replayWith(t, memLedger(t), b).Encode()
	if !bytes.Equal(got, want) {
		t.Fatal("replaying the log gives another state")
	}
}

// TestCancelRun cancels the waiting intents of one run of one tenant and
// leaves other runs, other tenants and final intents alone.
func TestCancelRun(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	for _, e := range b.logs {
		f.Apply(e)
	}
	pending := func(a *Admit) { a.Decision.ApprovalRequired = true }
	apply(t, f, b, MsgAdmit, admit("a1", "k1", "p", t0, pending))
	apply(t, f, b, MsgAdmit, admit("a2", "k2", "p", t0, pending))
	apply(t, f, b, MsgAdmit, admit("b1", "k3", "p", t0, pending, func(a *Admit) { a.RunID = "run-2" }))
	apply(t, f, b, MsgAdmit, admit("g1", "k4", "p", t0, pending, func(a *Admit) { a.Tenant = "globex" }))
	apply(t, f, b, MsgApprove, approve("a2", "nonce-1", "deny", t0.Add(time.Second)))
	if r := apply(t, f, b, MsgCancel, Cancel{At: t0.Add(2 * time.Second), Tenant: "acme", RunID: "run-1", By: "k"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	for id, want := range map[string]string{"a1": StateCanceled, "a2": StateDenied, "b1": StatePendingApproval, "g1": StatePendingApproval} {
		if got := state(t, f, id).State; got != want {
			t.Errorf("%s is %s, want %s", id, got, want)
		}
	}
	if got := f.Reader().RunIntents("acme", "run-1"); len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a2" {
		t.Fatalf("RunIntents: %+v", got)
	}
}

// replayWith applies b's log to a fresh FSM with ledger l.
func replayWith(t *testing.T, l Ledger, b *logBuilder) *FSM {
	t.Helper()
	f := withLedger(t, l)
	for _, e := range b.logs {
		f.Apply(e)
	}
	return f
}
