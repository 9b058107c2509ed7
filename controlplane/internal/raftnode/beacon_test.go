package raftnode

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
)

// TestFollowersLearnCommitsAtOnce: with a CommitTimeout far longer than the
// test may run, a follower still applies the last entry the leader applied,
// with nothing proposed after it: the commit beacon told it. Without the
// beacon the follower would learn of the commit only after 5 to 10 minutes.
func TestFollowersLearnCommitsAtOnce(t *testing.T) {
	ca := newTestCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const long = 5 * time.Minute
	a := startNodeWith(t, ca, "s1", t.TempDir(), true, long)
	defer a.Shutdown()
	if _, err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := []*Node{a}
	for _, id := range []string{"s2", "s3"} {
		n := startNodeWith(t, ca, id, t.TempDir(), false, long)
		defer n.Shutdown()
		if err := a.Raft.AddVoter(raft.ServerID(id), n.Addr(), 0, 10*time.Second).Error(); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
		nodes = append(nodes, n)
	}
	for i, propose := range []func(context.Context, fsm.MsgType, any) (fsm.Result, uint64, error){a.Apply, a.Propose, a.Apply} {
		// Each entry alone: the previous one is applied everywhere first.
		_, idx, err := propose(ctx, fsm.MsgAdmit, admitCmd(i))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes[1:] {
			for n.FSM.Index() < idx {
				select {
				case <-ctx.Done():
					t.Fatalf("entry %d (index %d): follower %s is still at %d: it was never told of the commit", i, idx, n.Raft, n.FSM.Index())
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
	}
	if got := a.beacon.sent.Load(); got == 0 {
		t.Fatal("no barrier was proposed")
	}
}

type fakeBarrier struct {
	mu      sync.Mutex
	calls   int
	release chan struct{} // each barrier waits for one value
}

func (f *fakeBarrier) Barrier(time.Duration) raft.Future {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	<-f.release
	return doneFuture{}
}

func (f *fakeBarrier) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type doneFuture struct{}

func (doneFuture) Error() error { return nil }

// TestCommitBeaconRules: a barrier only once no entry is in flight, only for
// applied entries, one at a time, and another after it when an entry was
// applied while it was in flight.
func TestCommitBeaconRules(t *testing.T) {
	f := &fakeBarrier{release: make(chan struct{})}
	b := newCommitBeacon(f)
	waitCalls := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for f.count() != want {
			if time.Now().After(deadline) {
				t.Fatalf("barriers: got %d, want %d", f.count(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}

	b.begin()
	b.begin()
	b.end(true) // one still in flight: it will carry the commit index
	b.begin()
	b.end(false) // failed: nothing to tell
	if f.count() != 0 || b.sending.Load() {
		t.Fatal("a barrier was proposed while an entry was in flight, or for a failed one")
	}
	b.end(true)
	waitCalls(1)

	// Applied while the barrier is in flight: no second barrier at once...
	b.begin()
	b.end(true)
	if f.count() != 1 {
		t.Fatalf("two barriers in flight")
	}
	// ...but one after it.
	f.release <- struct{}{}
	waitCalls(2)
	f.release <- struct{}{}
	b.close() // the run ends: nothing was applied during the second barrier
	if f.count() != 2 {
		t.Fatalf("barriers: got %d, want 2", f.count())
	}

	// Closed: no more barriers.
	b.begin()
	b.end(true)
	if f.count() != 2 {
		t.Fatal("a barrier after close")
	}
}
