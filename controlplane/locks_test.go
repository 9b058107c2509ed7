package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

// TestLocksAdmissionDispatchRunning: a lock on the tenant stops the intent
// its node runs (the node gets a cancel frame and reports canceled), ends the
// one waiting for approval (canceled, locked) and refuses new ones (rejected,
// locked); deleted, it lets them in again. A lock on the node keeps work from
// it (the intent waits queued) until it is deleted. Bad locks are malformed;
// only the admin may make them.
func TestLocksAdmissionDispatchRunning(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	d.node.Hold.Store(true)
	running, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"a"}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the node to run the intent", func() bool { return d.node.Runs.Load() > 0 })
	pending, err := d.c.Submit(ctx, d.intent(t, "echo_approval", `{}`), nil, 0)
	if err != nil || pending.State != "pending_approval" {
		t.Fatalf("%+v %v", pending, err)
	}

	for _, bad := range []client.LockSpec{
		{Reason: "nothing named"},
		{Tenant: d.creds.Tenant},
		{Tenant: "no spaces allowed", Reason: "r"},
		{Tool: "echo", Reason: "r", TTL: 400 * 24 * time.Hour},
	} {
		if _, err := d.admin.CreateLock(ctx, bad); apiCode(err) != protocol.CodeMalformed {
			t.Errorf("lock %+v: %v, want malformed", bad, err)
		}
	}
	if _, err := d.c.CreateLock(ctx, client.LockSpec{Tenant: d.creds.Tenant, Reason: "r"}); apiCode(err) != "unauthorized" {
		t.Fatalf("a lock without the admin token: %v", err)
	}
	l, err := d.admin.CreateLock(ctx, client.LockSpec{Tenant: d.creds.Tenant, Reason: "runaway agent"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.node.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the node running the tenant's tool got no cancel")
	}
	for _, c := range []struct {
		id, state string
		code      protocol.Code
	}{{running.IntentID, "canceled", protocol.CodeCanceled}, {pending.IntentID, "canceled", protocol.CodeLocked}} {
		r, err := d.c.Intent(ctx, c.id, 10*time.Second)
		if err != nil || r.State != c.state || r.Error == nil || r.Error.Code != c.code || r.ReceiptIndex == nil {
			t.Fatalf("intent %s: %+v %v, want %s (%s) with a receipt", c.id, r, err, c.state, c.code)
		}
	}
	refused, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"b"}`), nil, 5*time.Second)
	if err != nil || refused.State != "rejected" || refused.Error == nil || refused.Error.Code != protocol.CodeLocked {
		t.Fatalf("admission under the lock: %+v %v, want rejected locked", refused, err)
	}
	if locks, err := d.admin.Locks(ctx); err != nil || len(locks) != 1 || locks[0].ID != l.ID || locks[0].Reason != "runaway agent" {
		t.Fatalf("locks: %+v %v", locks, err)
	}
	if err := d.admin.DeleteLock(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.admin.DeleteLock(ctx, l.ID); apiCode(err) != "not_found" {
		t.Fatalf("deleting it again: %v", err)
	}

	// A node lock: the intent waits, queued, and runs once it is deleted.
	d.node.Hold.Store(false)
	nl, err := d.admin.CreateLock(ctx, client.LockSpec{Node: d.node.ID, TTL: time.Hour, Reason: "maintenance"})
	if err != nil || nl.ExpiresAt == "" {
		t.Fatalf("%+v %v", nl, err)
	}
	runs := d.node.Runs.Load()
	queued, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"c"}`), nil, 500*time.Millisecond)
	if err != nil || queued.State != "queued" {
		t.Fatalf("under a node lock: %+v %v, want queued", queued, err)
	}
	if n := d.node.Runs.Load(); n != runs {
		t.Fatalf("the locked node was given %d dispatches", n-runs)
	}
	if err := d.admin.DeleteLock(ctx, nl.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := d.c.Intent(ctx, queued.IntentID, 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("after the node lock: %+v %v, want completed", r, err)
	}
}
