package fsm

import (
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

func approveBy(intentID, approver, nonce, decision string, at time.Time) *Approve {
	a := approve(intentID, nonce, decision, at)
	a.Approver, a.ID = approver, "apr-"+approver+"-"+nonce
	return a
}

// TestSeveralApprovers: an intent that needs two distinct approvers waits
// after the first approval, refuses the same approver again (without using
// the nonce), runs after the second, and its receipt lists both; a denial by
// any approver ends it, with every approval so far in its receipt.
func TestSeveralApprovers(t *testing.T) {
	l := memLedger(t)
	f := withLedger(t, l)
	b := fleetLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	two := func(a *Admit) { a.Decision.ApprovalRequired, a.Decision.Approvals = true, 2 }
	apply(t, f, b, MsgAdmit, admit("pay", "k1", "p", t0, two))
	apply(t, f, b, MsgAdmit, admit("pay2", "k2", "p", t0, two))
	at := t0.Add(time.Minute)
	if r := apply(t, f, b, MsgApprove, approveBy("pay", "alice", "n1", protocol.DecisionApprove, at)); r.Err != nil {
		t.Fatal(r.Err)
	}
	if in := state(t, f, "pay"); in.State != StatePendingApproval || len(in.Approvals) != 1 || in.Approval.Approver != "alice" {
		t.Fatalf("after one of two approvals: %+v", in)
	}
	r := apply(t, f, b, MsgApprove, approveBy("pay", "alice", "n2", protocol.DecisionApprove, at))
	if r.Err == nil || r.Err.Code != protocol.CodeApprovalDuplicate || f.Reader().NonceConsumed("n2") {
		t.Fatalf("the same approver again: %+v, nonce used %v", r, f.Reader().NonceConsumed("n2"))
	}
	if r := apply(t, f, b, MsgApprove, approveBy("pay", "bob", "n3", protocol.DecisionApprove, at)); r.Err != nil {
		t.Fatal(r.Err)
	}
	in := state(t, f, "pay")
	if in.State != StateDispatched || len(in.Approvals) != 2 || in.Approvals[0].Approver != "alice" || in.Approvals[1].Approver != "bob" {
		t.Fatalf("after two approvals: %+v", in)
	}
	// A denial after one approval ends the other intent; its receipt holds
	// both.
	apply(t, f, b, MsgApprove, approveBy("pay2", "alice", "n4", protocol.DecisionApprove, at))
	apply(t, f, b, MsgApprove, approveBy("pay2", "carol", "n5", protocol.DecisionDeny, at))
	in = state(t, f, "pay2")
	if in.State != StateDenied || len(in.Approvals) != 2 || in.Receipt == nil {
		t.Fatalf("denied: %+v", in)
	}
	leaf, err := l.Leaf(int64(*in.Receipt))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := protocol.DecodeReceipt(leaf, 0)
	if err != nil || len(rc.Approvals) != 2 || rc.Approvals[1].Approver != "carol" || rc.Approval.Approver != "carol" {
		t.Fatalf("receipt: %+v %v\n%s", rc, err, leaf)
	}
}
