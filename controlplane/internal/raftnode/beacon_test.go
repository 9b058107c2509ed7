package raftnode

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/internal/testtier"
)

// TestFollowersLearnCommitsAtOnce: with a CommitTimeout far longer than the
// test may run, a follower still applies the last entry the leader applied,
// with nothing proposed after it: the commit notice told it. Without the
// notice the follower would learn of the commit only after 5 to 10 minutes.
//
// A leader steps down when its followers' answers come later than its
// lease (1 s here), as a starved process's do on a loaded machine (CI runs every
// package at once under -race on 2 cores: a voter added while the leader
// starved made it step down), and a new leader's first entry would tell the
// followers of every commit before it. So a round counts only if no node's
// leader changed and no node's term moved from the first leader's until the
// last entry was applied everywhere (Raft's own observations, not a
// sample); a round that saw either proves nothing either way and runs again
// on new nodes. A round that fails while every node kept its leader fails
// the test.
func TestFollowersLearnCommitsAtOnce(t *testing.T) {
	testtier.Slow(t, "rounds of three-node clusters, timed against the commit timeout")
	ca := newTestCA(t)
	const rounds = 5
	for round := 1; ; round++ {
		changed, err := learnCommitsRound(t, ca)
		switch {
		case !changed && err == nil:
			return
		case !changed:
			t.Fatal(err)
		case round == rounds:
			t.Fatalf("a node's leader changed in each of %d rounds; in the last: %v", rounds, err)
		}
		t.Logf("round %d: a node's leader changed (%v); again on new nodes", round, err)
	}
}

// learnCommitsRound is one round of TestFollowersLearnCommitsAtOnce, on
// three new nodes. changed reports that a node's leader or term changed
// while it ran: then err says nothing of the commit notices.
func learnCommitsRound(t *testing.T, ca *testCA) (changed bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const long = 5 * time.Minute
	a := startNodeWith(t, ca, "s1", t.TempDir(), true, long)
	defer a.Shutdown()
	if _, err := a.WaitLeader(ctx); err != nil {
		return false, err
	}
	// A node observing a leader other than a (none included) is a change;
	// a new node learning of a is not.
	var changes atomic.Int64
	watch := func(n *Node) {
		n.Raft.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
			if lo, ok := o.Data.(raft.LeaderObservation); ok && lo.LeaderID != "s1" {
				changes.Add(1)
			}
			return false
		}))
	}
	watch(a)
	term := a.Raft.CurrentTerm()
	nodes := []*Node{a}
	moved := func() bool {
		for _, n := range nodes {
			// Below a's term: not yet heard from a.
			if n.Raft.CurrentTerm() > term {
				return true
			}
		}
		return changes.Load() > 0 || a.Raft.State() != raft.Leader
	}
	for _, id := range []string{"s2", "s3"} {
		n := startNodeWith(t, ca, id, t.TempDir(), false, long)
		defer n.Shutdown()
		watch(n)
		if err := a.Raft.AddVoter(raft.ServerID(id), n.Addr(), 0, 10*time.Second).Error(); err != nil {
			return moved(), fmt.Errorf("add %s: %w", id, err)
		}
		nodes = append(nodes, n)
	}
	for i, propose := range []func(context.Context, fsm.MsgType, any) (fsm.Result, uint64, error){a.Apply, a.Propose, a.Apply} {
		// Each entry alone: the previous one is applied everywhere first.
		_, idx, err := propose(ctx, fsm.MsgAdmit, admitCmd(i))
		if err != nil {
			return moved(), err
		}
		for _, n := range nodes[1:] {
			for n.FSM.Reader().Index() < idx {
				select {
				case <-ctx.Done():
					return moved(), fmt.Errorf("entry %d (index %d): follower %s is still at %d: it was never told of the commit", i, idx, n.Raft, n.FSM.Reader().Index())
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
	}
	if moved() {
		return true, fmt.Errorf("the followers applied every entry, but the leader changed on the way (term %d)", term)
	}
	if got := a.tr.notices(); got == 0 {
		return false, fmt.Errorf("no commit notice was sent")
	}
	return false, nil
}

// TestCommitBeaconRules: a notice only once no entry is in flight, only for
// applied entries, and none after close.
func TestCommitBeaconRules(t *testing.T) {
	t.Parallel()
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
