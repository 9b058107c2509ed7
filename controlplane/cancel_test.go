package controlplane_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// receiptOutcome decodes the outcome and the result's status of the receipt
// an answer carries.
func receiptOutcome(t *testing.T, r *client.IntentResponse) (outcome, status string) {
	t.Helper()
	if r.ReceiptIndex == nil || len(r.Receipt) == 0 {
		t.Fatalf("intent %s (%s) carries no receipt", r.IntentID, r.State)
	}
	rc, err := protocol.DecodeReceipt(r.Receipt, 0)
	if err != nil {
		t.Fatalf("receipt: %v", err)
	}
	if len(rc.Result) > 0 && rc.Result.Kind() == '{' {
		var res struct{ Status string }
		jsonx.UnmarshalLenient(rc.Result, &res)
		status = res.Status
	}
	return rc.Outcome, status
}

// TestCancelWaiting cancels intents that were not dispatched: one waiting
// for approval and one queued for a node. Each ends canceled with a
// receipt whose outcome is canceled and which carries no result.
func TestCancelWaiting(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) string // submits, returns the intent id in its waiting state
		state string
	}{
		{"pending approval", func(t *testing.T) string {
			raw := d.intent(t, "echo_approval", `{"msg":"x"}`)
			r, err := d.c.Submit(ctx, raw, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			return r.IntentID
		}, "pending_approval"},
		{"queued", func(t *testing.T) string {
			// A drained node may be undrained: the intent waits for it.
			if err := d.admin.NodeAction(ctx, d.node.ID, "drain"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.admin.NodeAction(ctx, d.node.ID, "ready") })
			r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			return r.IntentID
		}, "queued"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := c.setup(t)
			if r, err := d.c.Intent(ctx, id, 0); err != nil || r.State != c.state {
				t.Fatalf("before the cancel: %+v %v, want %s", r, err, c.state)
			}
			r, err := d.c.CancelIntentWait(ctx, id, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if r.State != "canceled" || r.Error == nil || r.Error.Code != protocol.CodeCanceled {
				t.Fatalf("got %s %+v, want canceled with code canceled", r.State, r.Error)
			}
			if outcome, status := receiptOutcome(t, r); outcome != protocol.OutcomeCanceled || status != "" {
				t.Fatalf("receipt outcome %q, result status %q; want canceled and no result", outcome, status)
			}
			if n := d.node.Runs.Load(); n != 0 {
				t.Fatalf("the node was sent %d dispatches, want none", n)
			}
		})
	}
}

// TestCancelDispatched cancels an intent its node is running: the server
// sends the node a cancel frame, the node answers with a signed result of
// status canceled, and the intent ends canceled with that result in its
// receipt.
func TestCancelDispatched(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	d.node.Hold.Store(true)
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"long"}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	id := r.IntentID
	eventually.True(t, "the node to run the intent", func() bool { return d.node.Runs.Load() > 0 })
	r, err = d.c.CancelIntent(ctx, id)
	if err != nil || r.State != "dispatched" {
		t.Fatalf("cancel: %+v %v, want still dispatched until the node reports", r, err)
	}
	select {
	case got := <-d.node.canceled:
		if got != r.Dispatch.ID {
			t.Fatalf("cancel frame for %s, want %s", got, r.Dispatch.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the node got no cancel frame")
	}
	r, err = d.c.Intent(ctx, id, 10*time.Second)
	if err != nil || r.State != "canceled" || r.Error == nil || r.Error.Code != protocol.CodeCanceled {
		t.Fatalf("after the node's report: %+v %v, want canceled", r, err)
	}
	if outcome, status := receiptOutcome(t, r); outcome != protocol.OutcomeCanceled || status != protocol.StatusCanceled {
		t.Fatalf("receipt outcome %q, result status %q; want canceled, canceled", outcome, status)
	}
	// A second cancel changes nothing: no second frame, the same receipt.
	again, err := d.c.CancelIntent(ctx, id)
	if err != nil || again.State != "canceled" || *again.ReceiptIndex != *r.ReceiptIndex {
		t.Fatalf("second cancel: %+v %v", again, err)
	}
	select {
	case got := <-d.node.canceled:
		t.Fatalf("a second cancel frame for %s", got)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestCancelFinalAndOthers: a final intent is left as it is (its state
// answered, no receipt added); another tenant's key finds no intent and no
// run; the admin token may cancel; an unknown intent is not found.
func TestCancelFinalAndOthers(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	done, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 10*time.Second)
	if err != nil || done.State != "completed" {
		t.Fatalf("submit: %+v %v", done, err)
	}
	r, err := d.c.CancelIntent(ctx, done.IntentID)
	if err != nil || r.State != "completed" || r.Error != nil || r.ReceiptIndex == nil || *r.ReceiptIndex != *done.ReceiptIndex {
		t.Fatalf("cancel of a completed intent: %+v %v, want it completed with its receipt, unchanged", r, err)
	}

	// Another tenant's key: the intent and the run are not found.
	other := []byte("globex's orchestrator key, 32 b.")
	if err := d.admin.Admin(ctx, "PUT", "tenants/globex/keys/g1", []byte(`{"secret":"`+base64.StdEncoding.EncodeToString(other)+`"}`)); err != nil {
		t.Fatal(err)
	}
	pending, err := d.c.Submit(ctx, d.intent(t, "echo_approval", `{}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := client.New("http://"+d.s.Addr().String(), "")
	g.SignReads("globex", "g1", other)
	if _, err := g.CancelIntent(ctx, pending.IntentID); apiCode(err) != "not_found" {
		t.Fatalf("another tenant's cancel: %v, want not_found", err)
	}
	if _, err := g.CancelRun(ctx, d.creds.Tenant, "run-1"); apiCode(err) != "not_found" {
		t.Fatalf("another tenant's run cancel: %v, want not_found", err)
	}
	if r, _ := d.c.Intent(ctx, pending.IntentID, 0); r.State != "pending_approval" {
		t.Fatalf("after another tenant's cancel the intent is %s", r.State)
	}
	// No credentials: unauthorized.
	if _, err := client.New("http://"+d.s.Addr().String(), "").CancelIntent(ctx, pending.IntentID); apiCode(err) != "unauthorized" {
		t.Fatalf("a cancel without credentials: %v, want unauthorized", err)
	}
	if _, err := d.c.CancelIntent(ctx, "no-such-intent"); apiCode(err) != "not_found" {
		t.Fatalf("cancel of an unknown intent: %v, want not_found", err)
	}
	// The admin may.
	if r, err := d.admin.CancelIntent(ctx, pending.IntentID); err != nil || r.State != "canceled" {
		t.Fatalf("the admin's cancel: %+v %v", r, err)
	}
}

// TestCancelRun cancels a run: its intents that have not ended end
// canceled, those that ended stay as they are, and another run is left
// alone.
func TestCancelRun(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	inRun := func(run string) func(*protocol.Intent) { return func(in *protocol.Intent) { in.RunID = run } }
	done, err := d.c.Submit(ctx, d.intent(t, "echo", `{}`, inRun("run-a")), nil, 10*time.Second)
	if err != nil || done.State != "completed" {
		t.Fatalf("%+v %v", done, err)
	}
	var waiting []string
	for range 3 {
		r, err := d.c.Submit(ctx, d.intent(t, "echo_approval", `{}`, inRun("run-a")), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, r.IntentID)
	}
	otherRun, err := d.c.Submit(ctx, d.intent(t, "echo_approval", `{}`, inRun("run-b")), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := d.c.CancelRunWait(ctx, d.creds.Tenant, "run-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, in := range rc.Intents {
		got[in.IntentID] = in.State
	}
	if len(got) != 4 || got[done.IntentID] != "completed" {
		t.Fatalf("run answer %+v, want 4 intents, the completed one still completed", rc)
	}
	for _, id := range waiting {
		if got[id] != "canceled" {
			t.Errorf("intent %s is %s, want canceled", id, got[id])
		}
		r, err := d.c.Intent(ctx, id, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if outcome, _ := receiptOutcome(t, r); outcome != protocol.OutcomeCanceled {
			t.Errorf("intent %s: receipt outcome %s", id, outcome)
		}
	}
	if r, _ := d.c.Intent(ctx, otherRun.IntentID, 0); r.State != "pending_approval" {
		t.Fatalf("the other run's intent is %s, want pending_approval", r.State)
	}
	// Again: nothing changes.
	rc2, err := d.c.CancelRun(ctx, d.creds.Tenant, "run-a")
	if err != nil || len(rc2.Intents) != 4 {
		t.Fatalf("second run cancel: %+v %v", rc2, err)
	}
}
