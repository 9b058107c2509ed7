package raftnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testtier"
)

// heldLog is a fake Raft: it applies each entry to a real FSM, in order, but
// only when the test releases it, and records every entry.
type heldLog struct {
	f       *fsm.FSM
	mu      sync.Mutex
	entries [][]byte
	release chan error // one per entry: nil applies it, an error fails it
}

type heldFuture struct {
	done  chan struct{}
	err   error
	index uint64
	res   any
}

func (h *heldFuture) Error() error  { <-h.done; return h.err }
func (h *heldFuture) Index() uint64 { <-h.done; return h.index }
func (h *heldFuture) Response() any { <-h.done; return h.res }
func (h *heldLog) proposed() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.entries...)
}
func (h *heldLog) waitProposed(n int) {
	for len(h.proposed()) < n {
		time.Sleep(time.Millisecond)
	}
}
func newHeldLog(t *testing.T) *heldLog { return &heldLog{f: newFSM(t), release: make(chan error)} }

func (h *heldLog) Apply(cmd []byte, _ time.Duration) raft.ApplyFuture {
	h.mu.Lock()
	h.entries = append(h.entries, cmd)
	index := uint64(len(h.entries))
	h.mu.Unlock()
	fut := &heldFuture{done: make(chan struct{}), index: index}
	go func() {
		defer close(fut.done)
		if fut.err = <-h.release; fut.err == nil {
			fut.res = h.f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: cmd})
		}
	}()
	return fut
}

func newFSM(t *testing.T) *fsm.FSM {
	t.Helper()
	f, err := fsm.New(fsm.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type proposed struct {
	res fsm.Result
	err error
}

// proposeAsync proposes cmd through g and delivers the outcome on the channel.
func proposeAsync(g *grouper, cmd *fsm.Admit) <-chan proposed {
	out := make(chan proposed, 1)
	n := &Node{group: g}
	go func() {
		res, _, err := n.Propose(context.Background(), fsm.MsgAdmit, cmd)
		out <- proposed{res, err}
	}()
	return out
}

// TestProposeGroupsWhatQueues: a proposal made while the leader has no entry
// in flight goes alone; those made while one is in flight queue and go
// together in the next entry, and each proposer gets its own command's
// result — including a repeat of an idempotency key inside the group, which
// is answered as the original.
func TestProposeGroupsWhatQueues(t *testing.T) {
	t.Parallel()
	h := newHeldLog(t)
	g := newGrouper(h, GroupConfig{MaxCommands: 64, MaxBytes: 1 << 20, InFlight: 1})
	defer g.close()
	first := proposeAsync(g, admitCmd(0))
	h.waitProposed(1)
	var rest []<-chan proposed
	for i := 1; i <= 10; i++ {
		rest = append(rest, proposeAsync(g, admitCmd(i)))
		waitSent(g, i+1) // in this order
	}
	waitSent(g, 11)
	rest = append(rest, proposeAsync(g, admitCmd(5))) // the same intent again, later in the same group
	waitSent(g, 12)
	h.release <- nil
	if p := <-first; p.err != nil || p.res.IntentID != "int-0" {
		t.Fatalf("first: got %+v, want int-0", p)
	}
	h.waitProposed(2)
	h.release <- nil
	for i, ch := range rest {
		p := <-ch
		want := fmt.Sprintf("int-%d", i+1)
		if i == 10 {
			want = "int-5"
		}
		if p.err != nil || p.res.IntentID != want || p.res.Duplicate != (i == 10) {
			t.Errorf("proposal %d: got %+v, want %s (duplicate %v)", i+1, p, want, i == 10)
		}
	}
	entries := h.proposed()
	if len(entries) != 2 || fsm.MsgType(entries[0][0]) != fsm.MsgAdmit || fsm.MsgType(entries[1][0]) != fsm.MsgGroup {
		t.Fatalf("got %d entries, want one admit alone then one group", len(entries))
	}
}

// TestProposeSizeLimits: a group stops at MaxCommands and at MaxBytes; what
// did not fit goes in the next entry.
func TestProposeSizeLimits(t *testing.T) {
	t.Parallel()
	one, _ := fsm.Encode(fsm.MsgAdmit, admitCmd(1))
	for name, cfg := range map[string]GroupConfig{
		"commands": {MaxCommands: 3, MaxBytes: 1 << 20, InFlight: 1},
		"bytes":    {MaxCommands: 64, MaxBytes: 3*len(one) + 2, InFlight: 1},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHeldLog(t)
			g := newGrouper(h, cfg)
			defer g.close()
			outs := []<-chan proposed{proposeAsync(g, admitCmd(0))}
			h.waitProposed(1)
			for i := 1; i <= 5; i++ {
				outs = append(outs, proposeAsync(g, admitCmd(i)))
				waitSent(g, i+1)
			}
			for k := 1; k <= 3; k++ {
				h.release <- nil
				h.waitProposed(min(k+1, 3))
			}
			for i, ch := range outs {
				if p := <-ch; p.err != nil || p.res.IntentID != fmt.Sprintf("int-%d", i) {
					t.Errorf("proposal %d: got %+v", i, p)
				}
			}
			var sizes []int
			for _, e := range h.proposed() {
				sizes = append(sizes, groupLen(e))
			}
			if fmt.Sprint(sizes) != "[1 3 2]" {
				t.Errorf("got entries of %v commands, want [1 3 2]", sizes)
			}
		})
	}
}

// groupLen is how many commands an entry carries: the count is the first
// varint after a group's type byte, one byte while under 128.
func groupLen(entry []byte) int {
	if fsm.MsgType(entry[0]) != fsm.MsgGroup {
		return 1
	}
	return int(entry[1])
}

// TestProposeFailureReachesEveryone: when Raft refuses the entry (leadership
// lost), every proposer of the group learns it as ErrNotLeader.
func TestProposeFailureReachesEveryone(t *testing.T) {
	t.Parallel()
	h := newHeldLog(t)
	g := newGrouper(h, GroupConfig{MaxCommands: 64, MaxBytes: 1 << 20, InFlight: 1})
	defer g.close()
	outs := []<-chan proposed{proposeAsync(g, admitCmd(0))}
	h.waitProposed(1)
	for i := 1; i <= 4; i++ {
		outs = append(outs, proposeAsync(g, admitCmd(i)))
	}
	waitSent(g, 5)
	h.release <- nil
	h.waitProposed(2)
	h.release <- raft.ErrLeadershipLost
	for i, ch := range outs {
		p := <-ch
		if i == 0 && p.err != nil {
			t.Errorf("proposal 0 was applied alone; got %v", p.err)
		}
		if i > 0 && !errors.Is(p.err, ErrNotLeader) {
			t.Errorf("proposal %d: got %v, want ErrNotLeader", i, p.err)
		}
	}
}

// TestProposeAfterClose: a closed grouper refuses new proposals and those
// still queued, and a cancelled context gives up waiting for the queue.
func TestProposeAfterClose(t *testing.T) {
	t.Parallel()
	h := newHeldLog(t)
	g := newGrouper(h, GroupConfig{MaxCommands: 1, MaxBytes: 1 << 20, InFlight: 1})
	first := proposeAsync(g, admitCmd(0))
	h.waitProposed(1)
	// One proposal waits for the entry in flight, two fill the queue.
	var queued []<-chan proposed
	for i := 1; i <= 3; i++ {
		queued = append(queued, proposeAsync(g, admitCmd(i)))
		waitSent(g, i+1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := &Node{group: g}
	if _, _, err := n.Propose(ctx, fsm.MsgAdmit, admitCmd(4)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("propose into a full queue: got %v, want the context's deadline", err)
	}
	g.close()
	for i, ch := range queued {
		if p := <-ch; !errors.Is(p.err, raft.ErrRaftShutdown) {
			t.Errorf("queued %d at close: got %v, want ErrRaftShutdown", i+1, p.err)
		}
	}
	h.release <- raft.ErrRaftShutdown
	if p := <-first; !errors.Is(p.err, raft.ErrRaftShutdown) {
		t.Errorf("in flight at close: got %v, want ErrRaftShutdown", p.err)
	}
	if _, _, err := n.Propose(context.Background(), fsm.MsgAdmit, admitCmd(5)); !errors.Is(err, raft.ErrRaftShutdown) {
		t.Errorf("propose after close: got %v, want ErrRaftShutdown", err)
	}
}

func waitSent(g *grouper, n int) {
	for g.sent.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
}

// TestClusterProposeConcurrently: on three real servers, concurrent
// proposals each get their own result, group entries form, and every replica
// holds the same state.
func TestClusterProposeConcurrently(t *testing.T) {
	testtier.Slow(t, "a three-node cluster under concurrent proposals")
	ca := newTestCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := startNode(t, ca, "s1", t.TempDir(), true)
	if _, err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	largest := 0
	observe := func(n int) { mu.Lock(); largest = max(largest, n); mu.Unlock() }
	a.group.observe = observe
	nodes := []*Node{a}
	for _, id := range []string{"s2", "s3"} {
		n := startNode(t, ca, id, t.TempDir(), false)
		defer n.Shutdown()
		n.group.observe = observe
		if err := a.Raft.AddVoter(raft.ServerID(id), n.Addr(), 0, 10*time.Second).Error(); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
		nodes = append(nodes, n)
	}
	defer a.Shutdown()
	const n = 300
	var wg sync.WaitGroup
	// A retry after a lost leadership may be answered as a duplicate.
	errs := make(chan error, n)
	var last uint64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, idx, err := proposeAnywhere(ctx, nodes, admitCmd(i%250)) // 50 repeats
			switch {
			case err != nil:
				errs <- err
			case res.IntentID != fmt.Sprintf("int-%d", i%250):
				errs <- fmt.Errorf("proposal %d answered as %q", i, res.IntentID)
			}
			mu.Lock()
			last = max(last, idx)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if largest < 2 {
		t.Errorf("300 concurrent proposals formed no group (largest entry %d)", largest)
	}
	var want []byte
	for _, m := range nodes {
		eventually.True(t, fmt.Sprintf("%s to apply %d", m.Raft, last), func() bool { return m.FSM.Reader().Index() >= last })
		got, _ := m.FSM.Encode()
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Fatalf("%s's state differs from s1's", m.Raft)
		}
	}
}

// proposeAnywhere proposes on the server that leads, and again on the next
// one when leadership moves (a loaded machine may lose a leader): the command
// is idempotent, as an orchestrator's retry is.
func proposeAnywhere(ctx context.Context, nodes []*Node, cmd *fsm.Admit) (fsm.Result, uint64, error) {
	for {
		for _, n := range nodes {
			if n.Raft.State() != raft.Leader {
				continue
			}
			res, idx, err := n.Propose(ctx, fsm.MsgAdmit, cmd)
			if !errors.Is(err, ErrNotLeader) {
				return res, idx, err
			}
		}
		select {
		case <-ctx.Done():
			return fsm.Result{}, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRestartReplaysGroups: a server that committed groups rebuilds the same
// state from its log, and remembers the idempotency keys they bound.
func TestRestartReplaysGroups(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := startNode(t, ca, "s1", dir, true)
	n.WaitLeader(ctx)
	grouped := 0
	n.group.observe = func(k int) {
		if k > 1 {
			grouped++ // only the grouper's goroutine calls it
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := n.Propose(ctx, fsm.MsgAdmit, admitCmd(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	want, _ := n.FSM.Encode()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if grouped == 0 {
		t.Fatal("200 concurrent proposals formed no group")
	}
	m := startNode(t, ca, "s1", dir, true)
	defer m.Shutdown()
	m.WaitLeader(ctx)
	if err := m.Raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.FSM.Encode(); !bytes.Equal(got, want) {
		t.Fatal("state rebuilt from a log of groups differs")
	}
	if res, _, _ := m.Propose(ctx, fsm.MsgAdmit, admitCmd(7)); !res.Duplicate {
		t.Error("an idempotency key admitted in a group before the restart was admitted again")
	}
}
