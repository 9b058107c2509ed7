package controlplane_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
)

// TestIdleLeaderProposesNoTick: with nothing due, the leader's tick proposes
// no entry (the Raft index stays); after an entry of Raft's own it proposes
// one, and once a join token's expiry has passed, one, which removes the
// token: the next proposes none again.
func TestIdleLeaderProposesNoTick(t *testing.T) {
	var now atomic.Pointer[time.Time]
	start := time.Now().UTC()
	now.Store(&start)
	d := startDevWith(t, func(c *controlplane.Config) {
		c.TickInterval = time.Hour // the test runs the ticks
		c.Verify.Now = func() time.Time { return *now.Load() }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.admin.CreateJoinToken(ctx, map[string]string{"a": "b"}, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	before := localcluster.AppliedIndex(d.s)
	for range 3 {
		if controlplane.Tick(d.s) {
			t.Fatal("a tick was proposed with nothing due")
		}
	}
	if got := localcluster.AppliedIndex(d.s); got != before {
		t.Fatalf("applied index moved from %d to %d with nothing due", before, got)
	}
	// An entry of Raft's own leaves the FSM behind the commit index, which a
	// server's readiness waits for: one tick catches it up.
	if err := controlplane.RaftBarrier(d.s); err != nil {
		t.Fatal(err)
	}
	if !controlplane.Tick(d.s) {
		t.Fatal("no tick proposed with the FSM behind Raft's commit index")
	}
	if controlplane.Tick(d.s) {
		t.Fatal("a second tick proposed with nothing due")
	}
	before = localcluster.AppliedIndex(d.s)
	later := start.Add(11 * time.Minute)
	now.Store(&later)
	if !controlplane.Tick(d.s) {
		t.Fatal("no tick proposed once the join token expired")
	}
	if got := localcluster.AppliedIndex(d.s); got <= before {
		t.Fatalf("applied index %d, want past %d", got, before)
	}
	if controlplane.Tick(d.s) {
		t.Fatal("a tick was proposed again: the first did not remove the expired token")
	}
}
