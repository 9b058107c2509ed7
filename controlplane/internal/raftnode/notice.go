package raftnode

import (
	"sync"
	"time"

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
	quiet  uint64 // replication requests not sent (noticePipeline), for tests
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
	quiet   int    // requests not sent in a row (redundant)
}

// maxQuiet is how many redundant requests in a row a follower is spared:
// the next one goes out all the same, so that a follower whose state the
// transport believes wrongly (one restarted with no request failing, an
// answer of its earlier life recorded late) is told the commit index within
// about maxQuiet CommitTimeouts however long the cluster stays idle.
const maxQuiet = 20

func newNoticeTransport(tr *raft.NetworkTransport) *noticeTransport {
	return &noticeTransport{NetworkTransport: tr, peers: map[raft.ServerID]*peerMatch{}}
}

// AppendEntries implements raft.Transport, watching the answer.
func (t *noticeTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err != nil {
		t.forget(id, args.Term)
	} else {
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
	w := &noticePipeline{AppendPipeline: p, t: t, id: id, out: make(chan raft.AppendFuture, pipelineDepth), stop: make(chan struct{})}
	go w.relay(t, id, target)
	return w, nil
}

// pipelineDepth is the most answers a pipeline holds before Raft reads them,
// as the network transport's own.
const pipelineDepth = 128

// noticePipeline passes a pipeline's answers on to Raft after the transport
// has seen them, and does not send what would tell the follower nothing.
//
// When no entries flow, hashicorp/raft's replication still sends each
// follower an AppendEntries with no entries every one to two CommitTimeouts,
// so that it learns the commit index; on an idle cluster these were about
// 40 % of the servers' CPU. One whose previous entry is the last the follower
// answered for in this term and whose commit index (capped at that entry)
// the follower has already answered for changes nothing on the follower, and
// is not sent: Raft gets no answer to it, so it counts as no contact (the
// leader's lease and the follower's liveness rest on the heartbeats, which
// are always sent). A follower that fails or refuses any AppendEntries, or
// answers in another term, is forgotten (forget): the next request goes out
// and Raft sees its answer, as it would have without this.
type noticePipeline struct {
	raft.AppendPipeline
	t        *noticeTransport
	id       raft.ServerID
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
			} else {
				t.forget(id, f.Request().Term)
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

// AppendEntries implements raft.AppendPipeline: a request that would tell the
// follower nothing new is not sent, and its future never answers.
func (p *noticePipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if p.t.redundant(p.id, args) {
		return quietFuture{start: time.Now(), req: args, resp: resp}, nil
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}

// quietFuture is a request noticePipeline did not send. Raft does not wait
// for a pipelined request's future: it reads answers from Consumer, where
// this one never appears.
type quietFuture struct {
	start time.Time
	req   *raft.AppendEntriesRequest
	resp  *raft.AppendEntriesResponse
}

func (f quietFuture) Error() error                          { return nil }
func (f quietFuture) Start() time.Time                      { return f.start }
func (f quietFuture) Request() *raft.AppendEntriesRequest   { return f.req }
func (f quietFuture) Response() *raft.AppendEntriesResponse { return f.resp }

// redundant reports that args has no entries, names as previous entry the
// last one the follower answered for in args' term, and carries a commit
// index the follower has answered for (capped at that entry, as the
// follower caps it): sending it would change nothing on the follower.
func (t *noticeTransport) redundant(id raft.ServerID, args *raft.AppendEntriesRequest) bool {
	if len(args.Entries) != 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if t.closed || p == nil || args.Term != p.term || args.PrevLogEntry != p.index || args.PrevLogTerm != p.logTerm ||
		min(args.LeaderCommitIndex, args.PrevLogEntry) > p.told {
		return false
	}
	if p.quiet >= maxQuiet {
		p.quiet = 0
		return false
	}
	p.quiet++
	t.quiet++
	return true
}

// forget drops what is known of a follower that failed, refused or answered
// in another term an AppendEntries of term (or of an older term than the
// knowledge's). A restarted follower has lost the commit index it was told;
// one that refused may hold another term: either is told again by the next
// request Raft sends, which is no longer redundant.
func (t *noticeTransport) forget(id raft.ServerID, term uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.peers[id]; p != nil && p.term <= term {
		delete(t.peers, id)
	}
}

func (p *noticePipeline) Close() error {
	p.stopOnce.Do(func() { close(p.stop) })
	return p.AppendPipeline.Close()
}

// matched records a follower's successful answer to an AppendEntries.
func (t *noticeTransport) matched(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	if req == nil || resp == nil {
		return
	}
	if !resp.Success || resp.Term != req.Term {
		t.forget(id, req.Term)
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
			if t.peers[id] == p {
				delete(t.peers, id)
			}
			t.mu.Unlock()
			return
		}
		p.told = max(p.told, commit)
		t.mu.Unlock()
	}
}

// quietCount is the number of replication requests not sent so far.
func (t *noticeTransport) quietCount() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.quiet
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
