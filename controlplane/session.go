package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/protocol"
)

// QUIC application error codes a server closes a node session with.
const (
	closeNormal   quic.ApplicationErrorCode = 0
	closeIdentity quic.ApplicationErrorCode = 1 // no valid node certificate
	closeRevoked  quic.ApplicationErrorCode = 2 // for good: the agent stops
	closeProtocol quic.ApplicationErrorCode = 3
	// closeUnknown: this server does not know the node (yet). A server that
	// is restarting, or lags the log, has not applied the node's enrollment:
	// the agent tries again, here or elsewhere. Only a revocation, which no
	// replica can see before it is committed, is for good.
	closeUnknown quic.ApplicationErrorCode = 4
)

// session is one node's QUIC session with this server: it pushes the node's
// dispatches as the FSM applies them and takes its results. An idle session
// costs one goroutine of its own (the reader) beside quic-go's: pushes run on
// a goroutine started when the FSM tells of a change to the node (kick).
type session struct {
	srv  *Server
	node string
	// id names the session in the log (fsm.NodeSession.Session), so that
	// its end cannot end a newer session of the node.
	id     string
	conn   *quic.Conn
	stream *quic.Stream

	wmu sync.Mutex // frames are written by the pusher and the reader
	// push is pushIdle, pushRunning or pushAgain; sent, the open dispatches
	// already pushed, belongs to the one push running.
	push atomic.Int32
	sent map[string]bool
	// canceled, the open dispatches whose cancel was sent (FrameCancel),
	// belongs to the push running too.
	canceled map[string]bool

	// attached is set by the handshake once the fleet holds the session;
	// welcomed once the node has its welcome, before which nothing is
	// pushed.
	attached bool
	welcomed atomic.Bool

	mu       sync.Mutex
	lastSeen time.Time
	inFlight int
	closed   chan struct{}
	once     sync.Once
}

// serveSession runs one node connection until it ends. The client
// certificate was verified against the cluster CA in the handshake; here it
// must also name an enrolled node that is not revoked, before any stream is
// accepted.
func (s *Server) serveSession(conn *quic.Conn) {
	tlsState := conn.ConnectionState().TLS
	if len(tlsState.PeerCertificates) == 0 {
		conn.CloseWithError(closeIdentity, "a node certificate is required")
		return
	}
	role, id, err := pki.Identity(tlsState.PeerCertificates[0])
	if err != nil || role != pki.RoleNode {
		s.metrics.sessionRefused.WithLabelValues("identity").Inc()
		conn.CloseWithError(closeIdentity, "not a node certificate")
		return
	}
	n, ok := s.reads.Node(id)
	switch {
	case !ok:
		s.metrics.sessionRefused.WithLabelValues("unknown").Inc()
		s.log.Warn("node session refused: this server does not know the node (yet)", "node", id)
		conn.CloseWithError(closeUnknown, "this server does not know the node yet; try again")
		return
	case n.Status == fsm.NodeRevoked:
		s.metrics.sessionRefused.WithLabelValues("revoked").Inc()
		conn.CloseWithError(closeRevoked, "node is revoked")
		return
	}
	ctx, cancel := context.WithTimeout(conn.Context(), 10*time.Second)
	stream, err := conn.AcceptStream(ctx)
	cancel()
	if err != nil {
		conn.CloseWithError(closeProtocol, "no session stream")
		return
	}
	ss := &session{srv: s, node: id, id: rand.Text(), conn: conn, stream: stream, closed: make(chan struct{}), lastSeen: time.Now()}
	if err := ss.handshake(); err != nil {
		ss.log().Warn("node session refused", "err", err)
		switch {
		case errors.Is(err, errDiskFull):
			ss.bye(diskFullBye, closeNormal)
		case errors.Is(err, errNotRecorded):
			// The agent tries again, here or elsewhere.
			ss.bye(protocol.ErrorBody{Code: protocol.CodeNoLeader, Message: err.Error()}, closeProtocol)
		default:
			ss.bye(protocol.ErrorBody{Code: protocol.CodeMalformed, Message: err.Error()}, closeProtocol)
		}
		if ss.attached {
			ss.end()
		}
		return
	}
	ss.welcomed.Store(true)
	s.metrics.sessions.Inc()
	ss.log().Info("node session began", "remote", conn.RemoteAddr().String())
	ss.kick()
	go ss.serve()
}

// serve reads the node's frames until the session ends, on a goroutine of
// its own whose stack never held the handshake's.
func (ss *session) serve() {
	ss.read()
	ss.close("session ended")
	ss.srv.metrics.sessions.Dec()
	ss.end()
}

// end forgets the session and, unless a newer one replaced it, records
// through Raft that this server no longer holds the node.
func (ss *session) end() {
	s := ss.srv
	if s.fleet.detach(ss) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := s.applyAnywhere(ctx, fsm.MsgNodeSession, fsm.NodeSession{At: s.now(), Node: ss.node, Server: s.cfg.ID, Session: ss.id}); err != nil {
			ss.log().Warn("could not record the end of a node session", "err", err)
		}
	}
	ss.log().Info("node session ended")
}

// errNotRecorded: the hello could not be committed (no leader in time).
var errNotRecorded = errors.New("the session could not be recorded")

// errDiskFull: this server of a cluster has its disk full (sendAgentsAway).
var errDiskFull = errors.New(diskFullMessage)

// handshake reads hello, records the session through Raft, and answers
// welcome.
func (ss *session) handshake() error {
	ss.stream.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := protocol.ReadFrame(ss.stream)
	ss.stream.SetReadDeadline(time.Time{})
	if err != nil {
		return err
	}
	var h protocol.Hello
	if f.Type != protocol.FrameHello {
		return fmt.Errorf("the first frame must be hello, not %q", f.Type)
	}
	if err := f.DecodeBody(&h); err != nil {
		return err
	}
	if h.Node != ss.node {
		return fmt.Errorf("hello names node %q, the certificate %q", h.Node, ss.node)
	}
	if h.Concurrency < 1 || h.Concurrency > 4096 || len(h.Tools) > 4096 || len(h.Tiers) > 16 {
		return errors.New("hello: concurrency must be 1-4096, at most 4096 tools and 16 tiers")
	}
	tools := make(map[string]string, len(h.Tools))
	for _, t := range h.Tools {
		if _, err := protocol.ParseHash(t.Hash); err != nil || t.Name == "" || len(t.Name) > 64 {
			return fmt.Errorf("hello: tool %.64q has no valid name and hash", t.Name)
		}
		tools[t.Name] = t.Hash
	}
	if err := protocol.CheckLabels(h.Labels); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	if ss.srv.diskFull() {
		return errDiskFull
	}
	cmd := fsm.NodeSession{At: ss.srv.now(), Node: ss.node, Server: ss.srv.cfg.ID, Session: ss.id, Connected: true,
		OS: h.OS, Arch: h.Arch, Version: h.Version, Tiers: h.Tiers, Tools: tools, Concurrency: h.Concurrency, Labels: h.Labels}
	// The session is this server's before the hello is recorded, so that
	// whoever reads that this server holds the node finds it here (its last
	// heartbeat; pushes wait for the welcome).
	ss.srv.fleet.attach(ss)
	ss.attached = true
	if ss.srv.diskFull() {
		// Found full between the check above and the attach: the sweep
		// of sendAgentsAway may have missed this session.
		return errDiskFull
	}
	// The hello is always recorded, never skipped because this server's
	// view already says the same: that view may lag the committed log (a
	// server replaying it after a restart, or a follower behind), and an
	// entry still to be applied here — this server's own "session lost"
	// from before it stopped, another server's "connected" — would leave
	// the node down, or held elsewhere, while it is connected here. The
	// entry is committed after all of those, so the node's record is decided
	// in log order; recording what is already there changes nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := ss.srv.applyAnywhere(ctx, fsm.MsgNodeSession, cmd)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: %w", errNotRecorded, err)
	}
	if res.Err != nil {
		return errors.New(res.Err.Message)
	}
	return ss.write(protocol.FrameWelcome, protocol.Welcome{
		Server:      ss.srv.cfg.ID,
		Keys:        []protocol.ServerKey{{KeyID: ss.srv.fleet.keyID, Cert: ss.srv.fleet.keyCert}},
		HeartbeatMS: ss.srv.cfg.AgentHeartbeat.Milliseconds(),
	})
}

func (ss *session) log() *slog.Logger { return ss.srv.log.With("node", ss.node) }

func (ss *session) write(t string, body any) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	ss.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return protocol.WriteFrame(ss.stream, t, body)
}

// byeLinger is how long a bye waits for the agent to close the connection
// before the server closes it.
const byeLinger = 2 * time.Second

// bye tells the agent why the session ends, then closes it. A connection
// closed at once could overtake the frame: the stream ends after the bye,
// and the connection is closed when the agent, having read it, closes its
// end, or after byeLinger.
func (ss *session) bye(e protocol.ErrorBody, code quic.ApplicationErrorCode) {
	ss.wmu.Lock()
	ss.stream.SetWriteDeadline(time.Now().Add(10 * time.Second))
	err := protocol.WriteFrame(ss.stream, protocol.FrameBye, protocol.Bye{Error: e})
	if err == nil {
		err = ss.stream.Close()
	}
	ss.wmu.Unlock()
	if err == nil {
		t := time.NewTimer(byeLinger)
		select {
		case <-ss.conn.Context().Done():
		case <-t.C:
		}
		t.Stop()
	}
	ss.conn.CloseWithError(code, e.Message)
	ss.close(e.Message)
}

func (ss *session) close(reason string) {
	ss.once.Do(func() {
		close(ss.closed)
		ss.conn.CloseWithError(closeNormal, reason)
	})
}

// Push states: no push running; one running; one running and told of a
// change since it read the node's dispatches, so it must read them again.
const (
	pushIdle int32 = iota
	pushRunning
	pushAgain
)

// kick makes the session push the node's open dispatches not yet sent: at
// once on a goroutine of its own when no push is running, else once more when
// the running one ends. Pushes never overlap, so frames keep their order and
// sent needs no lock. It never blocks: the FSM's node hook calls it.
func (ss *session) kick() {
	if !ss.welcomed.Load() {
		return // the welcome is followed by a kick
	}
	for {
		switch ss.push.Load() {
		case pushIdle:
			if ss.push.CompareAndSwap(pushIdle, pushRunning) {
				go ss.pushLoop()
				return
			}
		case pushRunning:
			if ss.push.CompareAndSwap(pushRunning, pushAgain) {
				return
			}
		default:
			return
		}
	}
}

func (ss *session) pushLoop() {
	for {
		if !ss.pushOpen() {
			return // the session is over: no push will run again
		}
		if ss.push.CompareAndSwap(pushRunning, pushIdle) {
			return
		}
		ss.push.Store(pushRunning) // it was pushAgain
	}
}

// pushOpen sends the node's open dispatches that were not sent yet, and ends
// the session of a revoked node. It reports whether the session goes on.
func (ss *session) pushOpen() bool {
	select {
	case <-ss.closed:
		return false
	default:
	}
	n, ok := ss.srv.reads.Node(ss.node)
	switch {
	case !ok: // not after the handshake found it; but never "revoked" for it
		ss.conn.CloseWithError(closeUnknown, "this server does not know the node")
		ss.close("node unknown")
		return false
	case n.Status == fsm.NodeRevoked:
		ss.bye(protocol.ErrorBody{Code: protocol.CodeNodeRevoked, Message: "node is revoked"}, closeRevoked)
		return false
	}
	open := ss.srv.reads.OpenDispatches(ss.node)
	if len(ss.sent) > len(open) {
		// Forget what has closed, so that sent holds open dispatches only.
		still := make(map[string]bool, len(open))
		for _, d := range open {
			if ss.sent[d.ID] {
				still[d.ID] = true
			}
		}
		ss.sent = still
	}
	if len(ss.canceled) > len(open) {
		still := make(map[string]bool, len(open))
		for _, d := range open {
			if ss.canceled[d.ID] {
				still[d.ID] = true
			}
		}
		ss.canceled = still
	}
	if ss.sent == nil {
		ss.sent = map[string]bool{}
	}
	if ss.canceled == nil {
		ss.canceled = map[string]bool{}
	}
	for _, d := range open {
		if ss.sent[d.ID] {
			continue
		}
		raw, err := ss.srv.signDispatch(d)
		if err != nil {
			// Nothing it is made of will change: give it up at once, so
			// that its slot is free and its intent ends with a receipt.
			ss.log().Error("cannot sign dispatch; abandoning it", "dispatch", d.ID, "err", err)
			ss.sent[d.ID] = true
			go ss.abandon(d.ID)
			continue
		}
		if err := ss.write(protocol.FrameDispatch, protocol.DispatchFrame{Dispatch: raw}); err != nil {
			ss.close("write failed")
			return false
		}
		ss.sent[d.ID] = true
		ss.srv.metrics.dispatchesSent.Inc()
	}
	// Cancels follow the dispatches they name, on the same stream: a node
	// always has the dispatch before its cancel.
	for _, d := range open {
		if !d.Cancel || ss.canceled[d.ID] || !ss.sent[d.ID] {
			continue
		}
		if err := ss.write(protocol.FrameCancel, protocol.CancelDispatch{DispatchID: d.ID}); err != nil {
			ss.close("write failed")
			return false
		}
		ss.canceled[d.ID] = true
		ss.log().Info("dispatch cancel sent", "dispatch", d.ID, "intent", d.IntentID, "by", d.CancelBy)
	}
	return true
}

// abandon records through Raft that this server could not sign a dispatch.
func (ss *session) abandon(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ss.srv.applyAnywhere(ctx, fsm.MsgAbandon, fsm.Abandon{At: ss.srv.now(), DispatchID: id, Server: ss.srv.cfg.ID})
	if err == nil && res.Err != nil {
		err = errors.New(res.Err.Message)
	}
	if err != nil {
		ss.log().Warn("could not abandon a dispatch it cannot sign", "dispatch", id, "err", err)
	}
}

// signDispatch makes the signed dispatch of a record: everything in it comes
// from the replicated state, signed with this server's key.
func (s *Server) signDispatch(d fsm.Dispatch) ([]byte, error) {
	in, ok := s.reads.Intent(d.IntentID)
	if !ok {
		return nil, fmt.Errorf("intent %s is gone", d.IntentID)
	}
	params, err := protocol.IntentParams(in.Raw) // verified when it was admitted
	if err != nil {
		return nil, err
	}
	tool, ok := s.reads.Tool(in.Tool)
	if !ok {
		return nil, fmt.Errorf("tool %s is gone", in.Tool)
	}
	out := &protocol.Dispatch{
		Type: protocol.KindDispatch.Type(), ID: d.ID, IntentID: d.IntentID, Node: d.Node, Tool: in.Tool,
		ToolManifestHash: tool.Hash, Params: params, PayloadHash: in.PayloadHash, Sandbox: tool.Tier,
		IssuedAt: protocol.FormatTime(d.IssuedAt), ExpiresAt: protocol.FormatTime(d.ExpiresAt),
		Nonce: d.Nonce, Fence: d.Fence, KeyID: s.fleet.keyID,
	}
	return out.SignCanonical(s.fleet.key)
}

// certificateRequest parses a CSR from the node and checks its signature:
// the node holds the key it asks a certificate for.
func certificateRequest(der []byte) (*x509.CertificateRequest, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the certificate request's signature does not verify: %w", err)
	}
	return csr, nil
}
