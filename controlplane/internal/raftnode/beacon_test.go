package raftnode

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
)

// TestFollowersLearnCommitsAtOnce: with a CommitTimeout far longer than the
// test may run, a follower still applies the last entry the leader applied,
// with nothing proposed after it: the commit notice told it. Without the
// notice the follower would learn of the commit only after 5 to 10 minutes.
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
	if got := a.tr.notices(); got == 0 {
		t.Fatal("no commit notice was sent")
	}
}

// TestCommitBeaconRules: a notice only once no entry is in flight, only for
// applied entries, and none after close.
func TestCommitBeaconRules(t *testing.T) {
	var calls int
	b := newCommitBeacon(func() { calls++ })
	b.begin()
	b.begin()
	b.end(true) // one still in flight: it will carry the commit index
	b.begin()
	b.end(false) // failed: nothing to tell
	if calls != 0 {
		t.Fatal("a notice while an entry was in flight, or for a failed one")
	}
	b.end(true)
	if calls != 1 {
		t.Fatalf("notices: got %d, want 1", calls)
	}
	b.begin()
	b.end(false)
	if calls != 1 {
		t.Fatal("a notice for an entry that was not applied")
	}
	b.close()
	b.begin()
	b.end(true)
	if calls != 1 {
		t.Fatal("a notice after close")
	}
}
