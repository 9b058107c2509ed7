package controlplane

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writhq/writ/protocol"
)

// fsmSpaceWindow is how long after the FSM's last wait for space this server
// still counts its disk as full: the FSM tries its write again at least
// every 2 s (fsm.spaceWaitMax) while it waits.
const fsmSpaceWindow = 5 * time.Second

// diskSpace is what this server knows of its disk: whether its Raft log
// refused the last append for want of space (a follower then falls behind
// the cluster: it stores nothing the leader sends until there is space), and
// when its FSM last waited for space to write a receipt or checkpoint (it
// applies nothing meanwhile). A server whose disk is full answers nothing
// from its own state: it refuses requests at once, 503 no_leader, so that
// clients go to another server instead of waiting on one that cannot catch
// up (refuseWhileFull).
type diskSpace struct {
	logFull atomic.Bool
	fsmWait atomic.Int64 // unix nanoseconds of the FSM's last wait, 0 if never
	mu      sync.Mutex
	filled  chan struct{} // closed, and replaced, each time the disk is found full
}

func newDiskSpace() *diskSpace { return &diskSpace{filled: make(chan struct{})} }

// logAppend is raftnode's OnLogSpace: how the last append went.
func (d *diskSpace) logAppend(full bool) {
	if d.logFull.Swap(full) != full && full {
		d.signal()
	}
}

// fsmWaits records a wait of the FSM for space.
func (d *diskSpace) fsmWaits() {
	if prev := d.fsmWait.Swap(time.Now().UnixNano()); !within(prev) {
		d.signal()
	}
}

func (d *diskSpace) fsmFull() bool { return within(d.fsmWait.Load()) }

// within reports whether the wait at (unix nanoseconds, 0 for none) was
// less than fsmSpaceWindow ago.
func within(at int64) bool {
	return at != 0 && time.Since(time.Unix(0, at)) < fsmSpaceWindow
}

// full reports whether this server's disk is full now.
func (d *diskSpace) full() bool { return d.logFull.Load() || d.fsmFull() }

func (d *diskSpace) signal() {
	d.mu.Lock()
	close(d.filled)
	d.filled = make(chan struct{})
	d.mu.Unlock()
}

// next returns a channel closed when the disk is next found full.
func (d *diskSpace) next() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.filled
}

// untilFull returns ctx, ended also when the disk is next found full.
func (d *diskSpace) untilFull(ctx context.Context) (context.Context, context.CancelFunc) {
	filled := d.next()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-filled:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// diskFullMessage is the refusal of a server whose disk is full.
const diskFullMessage = "this server's disk is full: it cannot keep up with the cluster; retry at another server"

// diskFull reports whether this server, one of a cluster, should refuse
// what it is asked because its disk is full. A server alone has nowhere to
// send its clients: it takes their requests, which wait for space.
func (s *Server) diskFull() bool { return s.cluster != nil && s.space.full() }

// diskFullBye is the bye of a node session on a cluster server whose disk
// is full: no_leader, like the API's refusal, so that the agent goes to the
// next server of its list.
var diskFullBye = protocol.ErrorBody{Code: protocol.CodeNoLeader, Message: diskFullMessage}

// sendAgentsAway runs on a cluster server that serves node sessions, until
// Close: each time the disk is found full, it ends every node session with a
// bye (diskFullBye). The dispatches this server would push wait for its FSM,
// which waits for space, and an intent could expire while the rest of the
// cluster is fine; the agents go to another server instead, which pushes
// their open dispatches again. Sessions that begin while the disk is full
// are refused the same way (session.handshake); a server alone keeps its
// sessions, as it has nowhere to send its agents.
func (s *Server) sendAgentsAway() {
	defer s.done.Done()
	filled := s.space.next()
	for {
		select {
		case <-filled:
		case <-s.stop:
			return
		}
		// The next signal is taken before the sweep: a session that
		// attaches after the sweep sees the disk full itself.
		filled = s.space.next()
		if !s.diskFull() {
			continue
		}
		sessions := s.fleet.all()
		s.log.Warn("the disk is full: node sessions sent to another server", "sessions", len(sessions))
		for _, ss := range sessions {
			go ss.bye(diskFullBye, closeNormal)
		}
	}
}

// refuseWhileFull answers 503 no_leader (with Retry-After) to the API
// requests of a cluster server whose disk is full, but for health, version
// and the endpoints between servers, before anything is read or written.
// A wait the disk interrupts later is refused by the code that waits
// (waitWhileSpace), never the write before it.
func (s *Server) refuseWhileFull(next http.Handler) http.Handler {
	if s.cluster == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.space.full() && strings.HasPrefix(r.URL.Path, "/v1/") && r.URL.Path != "/v1/health" && r.URL.Path != "/v1/version" && !internalPath(r.URL.Path) {
			writeError(w, protocol.CodeNoLeader, diskFullMessage)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// waitWhileSpace returns the context a wait of up to wait on this server's
// state takes: ctx, ended also when the disk fills (of a cluster server, as
// a server whose disk is full cannot catch up to see what it waits for),
// and cut, which reports whether the disk ended it. Call cut only once
// the wait is over; the context's resources go when ctx ends.
func (s *Server) waitWhileSpace(ctx context.Context, wait time.Duration) (context.Context, func() bool) {
	if wait <= 0 || s.cluster == nil {
		return ctx, func() bool { return false }
	}
	wctx, cancel := s.space.untilFull(ctx)
	return wctx, func() bool {
		cut := wctx.Err() != nil && ctx.Err() == nil
		cancel()
		return cut
	}
}

// noteFSMNoSpace is the FSM's OnNoSpace: it is about to wait for space.
func (s *Server) noteFSMNoSpace() {
	s.space.fsmWaits()
	s.yieldLeadership()
}

// yieldLeadership hands the leadership to another server while this one's
// FSM waits for disk space to write a receipt or checkpoint (fsm.OnNoSpace).
// Such a leader still appends to its Raft log and heartbeats, so the others
// would never elect another, yet it applies nothing and answers nothing:
// the cluster would wait as long as its disk stays full. It runs off the
// FSM's goroutine, one transfer at a time; the FSM asks again before each
// of its waits, so a failed transfer, or leadership won again, is retried.
func (s *Server) yieldLeadership() {
	if !s.isLeader() || !s.yielding.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.yielding.Store(false)
		began := time.Now()
		if err := s.node.Raft.LeadershipTransfer().Error(); err != nil {
			s.log.Warn("the disk is full, and the leadership could not be handed on", "err", err)
			return
		}
		s.log.Warn("the disk is full: handed the leadership on", "took", time.Since(began).Round(time.Millisecond))
	}()
}
