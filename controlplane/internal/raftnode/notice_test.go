package raftnode

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeFollower answers the AppendEntries it receives with success in term,
// or failure when fail is set, and keeps them.
type fakeFollower struct {
	tr   *raft.NetworkTransport
	term uint64
	mu   sync.Mutex
	fail bool
	got  []raft.AppendEntriesRequest
	ch   chan struct{}
}

func startFakeFollower(t *testing.T, term uint64) *fakeFollower {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFollower{tr: tr, term: term, ch: make(chan struct{}, 100)}
	go func() {
		for rpc := range tr.Consumer() {
			req, ok := rpc.Command.(*raft.AppendEntriesRequest)
			if !ok {
				rpc.Respond(nil, io.EOF)
				continue
			}
			f.mu.Lock()
			f.got = append(f.got, *req)
			ok = !f.fail
			f.mu.Unlock()
			rpc.Respond(&raft.AppendEntriesResponse{Term: f.term, Success: ok}, nil)
			f.ch <- struct{}{}
		}
	}()
	t.Cleanup(func() { tr.Close() })
	return f
}

// next waits for the next AppendEntries the follower receives.
func (f *fakeFollower) next(t *testing.T) raft.AppendEntriesRequest {
	t.Helper()
	select {
	case <-f.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no notice arrived")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got[len(f.got)-1]
}

// none checks that no AppendEntries arrives for a while.
func (f *fakeFollower) none(t *testing.T) {
	t.Helper()
	select {
	case <-f.ch:
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Fatalf("unexpected notice %+v", f.got[len(f.got)-1])
	case <-time.After(100 * time.Millisecond):
	}
}

func entries(term uint64, from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand})
	}
	return out
}

// TestNoticeRules: a notice names as previous entry the last one the
// follower answered for, never a commit index past it, in the term of the
// answers; none when the follower already knows; a follower that answers
// for more entries after a notice learns again; a failed notice is not
// retried; a new term forgets what the follower matched in the old one.
func TestNoticeRules(t *testing.T) {
	t.Parallel()
	f, tr, header := noticeSetup(t)
	const id = raft.ServerID("f")
	ok := &raft.AppendEntriesResponse{Term: 2, Success: true}

	// Nothing known of the follower yet: nothing to send.
	tr.notice(10)
	f.none(t)

	// The follower holds entries 6 and 7 of term 2 and was told commit 5.
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 5, PrevLogTerm: 1, Entries: entries(2, 6, 7), LeaderCommitIndex: 5}, ok)
	got := f.next(t) // commit 10 was noticed before: capped at 7
	if got.Term != 2 || got.PrevLogEntry != 7 || got.PrevLogTerm != 2 || got.LeaderCommitIndex != 7 || len(got.Entries) != 0 || string(got.ID) != "leader" {
		t.Fatalf("notice %+v: want term 2, previous entry 7 of term 2, commit 7, no entries", got)
	}
	tr.notice(10)
	f.none(t) // it knows all it can

	// An answer that failed, or of another term, teaches nothing.
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 7, PrevLogTerm: 2, Entries: entries(2, 8, 9)}, &raft.AppendEntriesResponse{Term: 2})
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 7, PrevLogTerm: 2, Entries: entries(2, 8, 9)}, &raft.AppendEntriesResponse{Term: 3, Success: true})
	f.none(t)

	// It caught up to 9 after the notice of commit 10: it learns 9.
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 7, PrevLogTerm: 2, Entries: entries(2, 8, 9), LeaderCommitIndex: 7}, ok)
	if got := f.next(t); got.PrevLogEntry != 9 || got.LeaderCommitIndex != 9 {
		t.Fatalf("notice %+v: want previous entry 9, commit 9", got)
	}

	// A replication request that carried the commit index: nothing to add.
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 9, PrevLogTerm: 2, Entries: entries(2, 10, 12), LeaderCommitIndex: 12}, ok)
	tr.notice(12)
	f.none(t)

	// A refused notice is not sent again.
	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	tr.notice(13)
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
		PrevLogEntry: 12, PrevLogTerm: 2, Entries: entries(2, 13, 13), LeaderCommitIndex: 12}, ok)
	if got := f.next(t); got.LeaderCommitIndex != 13 {
		t.Fatalf("notice %+v: want commit 13", got)
	}
	f.none(t)

	// A new term: what the follower matched before counts no more.
	f.mu.Lock()
	f.fail, f.term = false, 3
	f.mu.Unlock()
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 3}, &raft.AppendEntriesResponse{Term: 3, Success: true})
	tr.notice(20)
	f.none(t) // a heartbeat of term 3 matched no entry
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 3,
		PrevLogEntry: 13, PrevLogTerm: 2, Entries: entries(3, 14, 14), LeaderCommitIndex: 13}, ok3())
	if got := f.next(t); got.Term != 3 || got.PrevLogEntry != 14 || got.PrevLogTerm != 3 || got.LeaderCommitIndex != 14 {
		t.Fatalf("notice %+v: want term 3, previous entry 14 of term 3, commit 14", got)
	}

	// Closed: nothing more.
	tr.Close()
	tr.matched(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 3,
		PrevLogEntry: 14, PrevLogTerm: 3, Entries: entries(3, 15, 16), LeaderCommitIndex: 14}, ok3())
	tr.notice(30)
	f.none(t)
}

func ok3() *raft.AppendEntriesResponse { return &raft.AppendEntriesResponse{Term: 3, Success: true} }

// TestPipelineSendsNothingRedundant: on a pipeline, an AppendEntries with no
// entries whose previous entry and commit index the follower has answered
// for is not sent (the next one the follower receives is the one after it),
// one with a commit index it has not answered for is, and after the follower
// refuses an AppendEntries the same redundant request goes out again.
func TestPipelineSendsNothingRedundant(t *testing.T) {
	t.Parallel()
	f, tr, header := noticeSetup(t)
	const id = raft.ServerID("f")
	send, answered := pipelineTo(t, tr, id, f)
	empty := func(commit uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 7, PrevLogTerm: 2, LeaderCommitIndex: commit}
	}

	// Entries 6 and 7, commit 5: answered.
	send(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 5, PrevLogTerm: 1, Entries: entries(2, 6, 7), LeaderCommitIndex: 5})
	f.next(t)
	answered()

	// Commit 5 again, with nothing new: not sent. Commit 7: sent, and the
	// next request the follower receives.
	send(empty(5))
	send(empty(7))
	if got := f.next(t); got.LeaderCommitIndex != 7 || len(got.Entries) != 0 {
		t.Fatalf("follower received %+v: want the request of commit 7, the one of commit 5 unsent", got)
	}
	answered()
	// Commit 9 capped at entry 7, which it answered for: not sent.
	send(empty(9))
	if got := tr.quietCount(); got != 2 {
		t.Fatalf("%d requests not sent, want 2", got)
	}

	// A refusal (a heartbeat answered in a newer term) forgets the follower:
	// the same request goes out.
	f.mu.Lock()
	f.term = 3
	f.mu.Unlock()
	var resp raft.AppendEntriesResponse
	if err := tr.AppendEntries(id, f.tr.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2}, &resp); err != nil {
		t.Fatal(err)
	}
	f.next(t)
	send(empty(7))
	if got := f.next(t); got.LeaderCommitIndex != 7 || got.PrevLogEntry != 7 {
		t.Fatalf("follower received %+v: want the request of commit 7 again", got)
	}
	if fut := answered(); fut.Response().Term != 3 {
		t.Fatalf("answer %+v: want the follower's term 3, for Raft to see", fut.Response())
	}
	if got := tr.quietCount(); got != 2 {
		t.Fatalf("%d requests not sent, want still 2", got)
	}
}

// noticeSetup starts a fake follower in term 2 and a notice transport of a
// leader, closed with the test, and the header of the leader's requests.
func noticeSetup(t *testing.T) (*fakeFollower, *noticeTransport, raft.RPCHeader) {
	t.Helper()
	f := startFakeFollower(t, 2)
	inner, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	tr := newNoticeTransport(inner)
	t.Cleanup(func() { tr.Close() })
	return f, tr, raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte(inner.LocalAddr())}
}

// TestPipelineSendsOneInMaxQuiet: however long nothing new is to be told, one
// redundant request in maxQuiet+1 goes out, so that a follower the transport
// believes wrongly to know the commit index (restarted without a request
// failing) learns it all the same.
func TestPipelineSendsOneInMaxQuiet(t *testing.T) {
	t.Parallel()
	f, tr, header := noticeSetup(t)
	send, answered := pipelineTo(t, tr, "f", f)
	send(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 5, PrevLogTerm: 1, Entries: entries(2, 6, 7), LeaderCommitIndex: 7})
	f.next(t)
	answered()
	for round := range 3 {
		for range maxQuiet + 1 {
			send(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 7, PrevLogTerm: 2, LeaderCommitIndex: 7})
		}
		if got := f.next(t); got.LeaderCommitIndex != 7 || got.PrevLogEntry != 7 || len(got.Entries) != 0 {
			t.Fatalf("round %d: follower received %+v, want the redundant request of commit 7", round, got)
		}
		if got, want := tr.quietCount(), uint64((round+1)*maxQuiet); got != want {
			t.Fatalf("round %d: %d requests not sent, want %d", round, got, want)
		}
	}
}

// pipelineTo opens tr's pipeline to the fake follower f as id, closed with the
// test: send sends a request on it, answered waits for the next answer.
func pipelineTo(t *testing.T, tr *noticeTransport, id raft.ServerID, f *fakeFollower) (send func(*raft.AppendEntriesRequest), answered func() raft.AppendFuture) {
	t.Helper()
	pipe, err := tr.AppendEntriesPipeline(id, f.tr.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pipe.Close() })
	send = func(req *raft.AppendEntriesRequest) {
		t.Helper()
		if _, err := pipe.AppendEntries(req, new(raft.AppendEntriesResponse)); err != nil {
			t.Fatal(err)
		}
	}
	answered = func() raft.AppendFuture {
		t.Helper()
		select {
		case fut := <-pipe.Consumer():
			return fut
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return nil
		}
	}
	return send, answered
}
