package raftnode

import (
	"sync"

	"github.com/hashicorp/raft"
)

// noticeTransport is the Raft transport with one addition: it can tell the
// followers the leader's commit index at once (notice), without a new entry.
//
// hashicorp/raft sends the commit index only in AppendEntries that its
// replication sends for new entries, or, when none follow, after
// CommitTimeout. A barrier entry (what Writ used before) makes it send one at
// once, but costs a disk write on the leader and then on the follower before
// the follower takes the commit index: two fsyncs on the path of every
// dispatch pushed by a follower and of every wait a follower serves.
//
// To know what it may send, the transport watches the AppendEntries the
// leader's replication sends and their answers (pipelined or not): a
// successful answer means the follower's log holds the leader's entries up to
// the last one sent, in the leader's term. A notice is an AppendEntries with
// no entries whose previous entry is that last matched one and whose commit
// index is the leader's, capped at it: everything the follower may commit
// from it is then, by Raft's log matching, the leader's committed log, and it
// stores nothing, so the follower answers without writing to disk. A notice
// of an old term is refused by the follower like any stale AppendEntries, so
// a leader that lost its term cannot mislead anyone.
type noticeTransport struct {
	*raft.NetworkTransport
	mu     sync.Mutex
	peers  map[raft.ServerID]*peerMatch
	commit uint64 // the highest commit index noticed
	closed bool
	sent   uint64 // notices sent, for tests
}

// peerMatch is what the leader knows of one follower's log.
type peerMatch struct {
	target  raft.ServerAddress
	header  raft.RPCHeader // the leader's, from its last AppendEntries
	leader  []byte
	term    uint64 // the leader's term
	index   uint64 // the follower's log matches the leader's up to here...
	logTerm uint64 // ...whose entry has this term
	told    uint64 // the follower knows the commit index up to here
	sending bool   // a notice to it is in flight
}

func newNoticeTransport(tr *raft.NetworkTransport) *noticeTransport {
	return &noticeTransport{NetworkTransport: tr, peers: map[raft.ServerID]*peerMatch{}}
}

// AppendEntries implements raft.Transport, watching the answer.
func (t *noticeTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.matched(id, target, args, resp)
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport, watching the answers.
func (t *noticeTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	w := &noticePipeline{AppendPipeline: p, out: make(chan raft.AppendFuture, pipelineDepth), stop: make(chan struct{})}
	go w.relay(t, id, target)
	return w, nil
}

// pipelineDepth is the most answers a pipeline holds before Raft reads them,
// as the network transport's own.
const pipelineDepth = 128

// noticePipeline passes a pipeline's answers on to Raft after the transport
// has seen them.
type noticePipeline struct {
	raft.AppendPipeline
	out      chan raft.AppendFuture
	stop     chan struct{}
	stopOnce sync.Once
}

func (p *noticePipeline) relay(t *noticeTransport, id raft.ServerID, target raft.ServerAddress) {
	in := p.AppendPipeline.Consumer()
	for {
		select {
		case f := <-in:
			// The network transport hands over answered futures only.
			if f.Error() == nil {
				t.matched(id, target, f.Request(), f.Response())
			}
			select {
			case p.out <- f:
			case <-p.stop:
				return
			}
		case <-p.stop:
			return
		}
	}
}

func (p *noticePipeline) Consumer() <-chan raft.AppendFuture { return p.out }

func (p *noticePipeline) Close() error {
	p.stopOnce.Do(func() { close(p.stop) })
	return p.AppendPipeline.Close()
}

// matched records a follower's successful answer to an AppendEntries.
func (t *noticeTransport) matched(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if req == nil || resp == nil || !resp.Success || resp.Term != req.Term {
		return
	}
	last, lastTerm := req.PrevLogEntry, req.PrevLogTerm
	if n := len(req.Entries); n > 0 {
		last, lastTerm = req.Entries[n-1].Index, req.Entries[n-1].Term
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p == nil || req.Term > p.term {
		// A new term: nothing known of the follower's log in it before.
		p = &peerMatch{term: req.Term}
		t.peers[id] = p
	}
	if req.Term < p.term {
		return
	}
	//lint:ignore SA1019 Raft still fills Leader for servers older than RPCHeader.Addr; a notice carries it as replication does
	p.target, p.header, p.leader = target, req.RPCHeader, req.Leader
	if last > p.index {
		p.index, p.logTerm = last, lastTerm
	}
	// The follower commits up to the commit index sent, capped at its log.
	p.told = max(p.told, min(req.LeaderCommitIndex, last))
	// A follower that caught up after a notice went out learns it now.
	t.kickLocked(id, p)
}

// notice tells every follower that commit is the leader's commit index,
// as far as its log matches the leader's.
func (t *noticeTransport) notice(commit uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if commit > t.commit {
		t.commit = commit
	}
	for id, p := range t.peers {
		t.kickLocked(id, p)
	}
}

// kickLocked starts a notice to the follower if it has something to learn
// and none is in flight. Called with mu held.
func (t *noticeTransport) kickLocked(id raft.ServerID, p *peerMatch) {
	if t.closed || p.sending || min(t.commit, p.index) <= p.told {
		return
	}
	p.sending = true
	go t.send(id, p)
}

// send sends notices to one follower until it knows the commit index.
func (t *noticeTransport) send(id raft.ServerID, p *peerMatch) {
	for {
		t.mu.Lock()
		commit := min(t.commit, p.index)
		if t.closed || commit <= p.told || t.peers[id] != p {
			p.sending = false
			t.mu.Unlock()
			return
		}
		req := &raft.AppendEntriesRequest{
			RPCHeader: p.header, Term: p.term,
			//lint:ignore SA1019 sent as Raft's own replication sends it (see matched)
			Leader:       p.leader,
			PrevLogEntry: p.index, PrevLogTerm: p.logTerm, LeaderCommitIndex: commit,
		}
		target := p.target
		t.sent++
		t.mu.Unlock()
		var resp raft.AppendEntriesResponse
		err := t.NetworkTransport.AppendEntries(id, target, req, &resp)
		t.mu.Lock()
		if err != nil || !resp.Success || resp.Term != req.Term {
			// Replication will tell it, or a new leader will: nothing to
			// retry here.
			p.sending = false
			t.mu.Unlock()
			return
		}
		p.told = max(p.told, commit)
		t.mu.Unlock()
	}
}

// notices is the number of notices sent so far.
func (t *noticeTransport) notices() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent
}

// Close stops the notices and closes the network transport. A notice in
// flight ends with the connection it uses.
func (t *noticeTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.NetworkTransport.Close()
}
