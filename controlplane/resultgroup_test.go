package controlplane_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/protocol"
)

// TestResultsThroughGroupCommit: a node's results, and the outputs sent
// beside them, are proposed through group commit as admissions are, and
// every intent still completes with its own result.
func TestResultsThroughGroupCommit(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	const n = 24
	d.node.Hold.Store(true)
	ids := make([]string, n)
	for i := range ids {
		b := d.intent(t, "echo", fmt.Sprintf(`{"msg":"group-%d"}`, i), func(in *protocol.Intent) {
			in.ID, in.IdempotencyKey, in.RunID = fmt.Sprintf("group-%d", i), fmt.Sprintf("group-key-%d", i), fmt.Sprintf("group-run-%d", i)
		})
		r, err := d.c.Submit(ctx, b, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.IntentID
	}
	deadline := time.Now().Add(time.Minute)
	for d.node.Runs.Load() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := d.node.Runs.Load(); got != n {
		t.Fatalf("the node got %d dispatches, want %d", got, n)
	}
	entries0, commands0 := localcluster.GroupStats(d.s)
	d.node.Release() // every result at once
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.c.Intent(ctx, id, 30*time.Second)
			if err != nil || r.State != "completed" || len(r.Result) == 0 {
				t.Errorf("intent %s: %+v %v, want completed with its result", id, r, err)
			}
		}()
	}
	wg.Wait()
	entries, commands := localcluster.GroupStats(d.s)
	// Each result is two commands: its output, then the result.
	if commands-commands0 != 2*n {
		t.Fatalf("group commit proposed %d commands for %d results, want %d (output and result each)", commands-commands0, n, 2*n)
	}
	t.Logf("%d results' commands in %d Raft entries", commands-commands0, entries-entries0)
}

// TestApprovalsThroughGroupCommit: approvals sent at once go through group
// commit (one command each, counted by it), and each approved intent
// completes.
func TestApprovalsThroughGroupCommit(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	const n = 12
	approvals := make([][]byte, n)
	ids := make([]string, n)
	for i := range approvals {
		raw := d.intent(t, "echo_approval", fmt.Sprintf(`{"msg":"approve-%d"}`, i))
		r, err := d.c.Submit(ctx, raw, nil, 0)
		if err != nil || r.State != "pending_approval" {
			t.Fatalf("submit: %+v %v", r, err)
		}
		ids[i], approvals[i] = r.IntentID, d.approval(t, raw, "approve")
	}
	_, commands0 := localcluster.GroupStats(d.s)
	var wg sync.WaitGroup
	for i := range approvals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.c.Approve(ctx, approvals[i]); err != nil {
				t.Errorf("approve %s: %v", ids[i], err)
				return
			}
			if r, err := d.c.Intent(ctx, ids[i], 30*time.Second); err != nil || r.State != "completed" {
				t.Errorf("intent %s: %+v %v, want completed", ids[i], r, err)
			}
		}()
	}
	wg.Wait()
	// n approvals, and each run's output and result.
	if _, commands := localcluster.GroupStats(d.s); commands-commands0 != 3*n {
		t.Fatalf("group commit proposed %d commands for %d approved runs, want %d", commands-commands0, n, 3*n)
	}
}
