package controlplane_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

// receiptWhenCovered waits for an intent's receipt to be covered by a
// checkpoint and returns it decoded.
func receiptWhenCovered(t *testing.T, c *client.Client, id string) (*client.IntentResponse, *protocol.Receipt) {
	t.Helper()
	var r *client.IntentResponse
	eventually.NoError(t, "intent "+id+"'s receipt covered by a checkpoint", func() error {
		var err error
		if r, err = c.Intent(context.Background(), id, 0); err != nil {
			t.Fatal(err)
		}
		if r.ReceiptIndex == nil || r.Receipt == nil {
			return fmt.Errorf("state %s, no receipt", r.State)
		}
		return nil
	})
	rc, err := protocol.DecodeReceipt(r.Receipt, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r, rc
}

// TestQueuedIntentExpiresUndispatched: through a real server and node, an
// intent queued behind a busy node, whose expiry passes before the slot
// frees, ends expired with a receipt when it frees and is never sent to the
// node. No tick runs meanwhile (an hour apart), so the queue itself must
// check the expiry.
func TestQueuedIntentExpiresUndispatched(t *testing.T) {
	t.Parallel()
	d := startDevWith(t, func(c *controlplane.Config) { c.TickInterval = time.Hour })
	base := "http://" + d.s.Addr().String()
	one := enrollSim(t, d.s, base)
	one.Concurrency = 1
	one.Hold.Store(true)
	if err := one.connect(t, d.s.AgentAddr(), toolHashes(t, base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.close)
	waitReady(t, d.s, one.ID)
	ctx := context.Background()
	target := func(in *protocol.Intent) { in.Target = &protocol.Target{Node: one.ID} }
	busy, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"busy"}`, target), nil, 0)
	if err != nil || busy.State != "dispatched" {
		t.Fatalf("first intent: %+v %v", busy, err)
	}
	// An expiry far enough ahead to be admitted before it on a loaded
	// machine (tests run side by side), near enough to wait out.
	expiry := time.Now().UTC().Add(4 * time.Second)
	short, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"short"}`, target, func(in *protocol.Intent) {
		in.ExpiresAt = protocol.FormatTime(expiry)
	}), nil, 0)
	if err != nil || short.State != "queued" {
		t.Fatalf("intent behind a busy node: %+v %v, want queued", short, err)
	}
	eventually.True(t, "the node to run the first intent", func() bool { return one.Runs.Load() == 1 })
	time.Sleep(time.Until(expiry) + 500*time.Millisecond) // past its expiry
	one.Release()
	got, rc := receiptWhenCovered(t, d.c, short.IntentID)
	if got.State != "expired" || got.Error == nil || got.Error.Code != protocol.CodeExpired || got.Dispatch != nil {
		t.Fatalf("queued past its expiry: %+v, want expired, never dispatched", got)
	}
	if rc.Outcome != protocol.OutcomeExpired || rc.Dispatch != nil {
		t.Fatalf("receipt: %+v", rc)
	}
	if r, err := d.c.Intent(ctx, busy.IntentID, 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("the busy intent: %+v %v", r, err)
	}
	// The slot is free: the node takes the next intent at once. The node
	// holds it until released, so the submission does not wait for its end.
	next, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"next"}`, target), nil, 0)
	if err != nil || next.State != "dispatched" && next.State != "completed" {
		t.Fatalf("after the expired intent: %+v %v", next, err)
	}
	eventually.True(t, "the node to receive the next intent", func() bool { return one.Runs.Load() >= 2 })
	one.Release()
	if r, err := d.c.Intent(ctx, next.IntentID, 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("the next intent: %+v %v", r, err)
	}
	if n := one.Runs.Load(); n != 2 {
		t.Fatalf("the node ran %d dispatches, want 2 (never the expired intent)", n)
	}
}

// TestIntentWaitsForItsNode: an intent for a node that has not connected yet
// waits queued and completes once it connects; one for a node that never
// comes ends no_eligible_node after node_wait, not at once.
func TestIntentWaitsForItsNode(t *testing.T) {
	t.Parallel()
	const wait = 1500 * time.Millisecond
	d := startDevWith(t, func(c *controlplane.Config) { c.FSM.NodeWait = wait })
	base := "http://" + d.s.Addr().String()
	ctx := context.Background()
	late := enrollSim(t, d.s, base)
	never := enrollSim(t, d.s, base)

	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"early"}`, func(in *protocol.Intent) {
		in.Target = &protocol.Target{Node: late.ID}
	}), nil, 0)
	if err != nil || r.State != "queued" {
		t.Fatalf("before its node connected: %+v %v, want queued", r, err)
	}
	if err := late.connect(t, d.s.AgentAddr(), toolHashes(t, base)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(late.close)
	if got, err := d.c.Intent(ctx, r.IntentID, 10*time.Second); err != nil || got.State != "completed" || got.Dispatch == nil || got.Dispatch.Node != late.ID {
		t.Fatalf("once its node connected: %+v %v", got, err)
	}

	start := time.Now()
	r, err = d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"never"}`, func(in *protocol.Intent) {
		in.Target = &protocol.Target{Node: never.ID}
	}), nil, 30*time.Second)
	if err != nil || r.State != "rejected" || r.Error == nil || r.Error.Code != "no_eligible_node" {
		t.Fatalf("for a node that never comes: %+v %v", r, err)
	}
	if took := time.Since(start); took < wait {
		t.Fatalf("rejected after %s, before node_wait %s", took, wait)
	}
	if _, rc := receiptWhenCovered(t, d.c, r.IntentID); rc.Outcome != protocol.OutcomeRejected {
		t.Fatalf("receipt: %+v", rc)
	}
}
