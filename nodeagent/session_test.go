package nodeagent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testcontrol"
	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// fakeRunner stands for the Executor: it records what the session hands it
// and answers err.
type fakeRunner struct {
	mu       sync.Mutex
	handled  [][]byte
	servers  protocol.SignerKeys
	canceled []string
	err      error
}

func (r *fakeRunner) Handle(_ context.Context, raw []byte, servers protocol.SignerKeys) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handled = append(r.handled, bytes.Clone(raw))
	r.servers = servers
	return r.err
}

func (r *fakeRunner) Cancel(id string) {
	r.mu.Lock()
	r.canceled = append(r.canceled, id)
	r.mu.Unlock()
}
func (r *fakeRunner) InFlight() int { return 3 }

func (r *fakeRunner) seen() ([][]byte, protocol.SignerKeys, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.handled), r.servers, slices.Clone(r.canceled)
}

// fakeBox stands for the store's outbox.
type fakeBox struct {
	mu      sync.Mutex
	pending []store.Pending
	acked   []string
}

func (b *fakeBox) Outbox() ([]store.Pending, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.pending), nil
}

func (b *fakeBox) Ack(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.acked = append(b.acked, id)
	b.pending = slices.DeleteFunc(b.pending, func(p store.Pending) bool { return p.DispatchID == id })
	return nil
}

func (b *fakeBox) ackedIDs() []string { b.mu.Lock(); defer b.mu.Unlock(); return slices.Clone(b.acked) }

// running is an agent Run by a test; ended is closed when Run returns err.
type running struct {
	*Agent
	ended chan struct{}
	err   error
}

// startAgent runs an agent for id against the fake until the test ends.
func startAgent(t *testing.T, fc *testcontrol.Control, id *Identity, dir string, run runner, box outbox) *running {
	t.Helper()
	a, err := New(Options{Servers: []string{fc.Addr()}, DataDir: dir, Tiers: []string{"wasm", "process"},
		Tools: []protocol.ToolRef{{Name: "echo", Hash: "sha256:00"}}, Concurrency: 2, Labels: map[string]string{"zone": "a"},
		Logger: slog.New(slog.DiscardHandler)}, id, run, box)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Agent: a, ended: make(chan struct{})}
	go func() { r.err = a.Run(ctx); close(r.ended) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.ended:
		case <-time.After(testcontrol.Timeout):
			t.Error("the agent did not stop")
		}
	})
	return r
}

// TestSession: the agent's hello says who it is and what it has, under a
// client certificate naming the same node; it trusts the welcome's key,
// sends its outbox at once, drops what a server acknowledges, hands a
// dispatch to its runner byte for byte, passes a cancel on, answers an
// unverifiable dispatch with a reject carrying its code, heartbeats at the
// welcome's interval with its load, and sends a result delivered live.
func TestSession(t *testing.T) {
	t.Parallel()
	fc := testcontrol.Start(t, testcontrol.DefaultConfig())
	id, dir := enroll(t, fc)
	run := &fakeRunner{}
	box := &fakeBox{pending: []store.Pending{{DispatchID: "d-old", Result: []byte(`{"dispatch_id":"d-old"}`)}}}
	a := startAgent(t, fc, id, dir, run, box)

	s := fc.NextSession(t)
	h := s.Hello
	if h.Node != id.Node || h.Version != Version || h.OS != runtime.GOOS || h.Arch != runtime.GOARCH || h.Concurrency != 2 ||
		!slices.Equal(h.Tiers, []string{"wasm", "process"}) || len(h.Tools) != 1 || h.Tools[0].Name != "echo" || h.Labels["zone"] != "a" {
		t.Fatalf("hello = %+v", h)
	}
	if got := s.Peer.URIs[0].String(); got != "writ://node/"+id.Node {
		t.Fatalf("client certificate names %s", got)
	}

	var rf protocol.ResultFrame
	if err := s.Next(t, protocol.FrameResult).DecodeBody(&rf); err != nil || string(rf.Result) != `{"dispatch_id":"d-old"}` {
		t.Fatalf("first result = %s, %v; want the outbox's", rf.Result, err)
	}
	s.Send(t, protocol.FrameAck, protocol.Ack{DispatchID: "d-old"})
	eventually.True(t, "the outbox to drop the acknowledged result", func() bool { return slices.Equal(box.ackedIDs(), []string{"d-old"}) })

	dispatch := []byte(`{"type":"writ.dispatch/v1","dispatch_id":"d-1","x":[1,2]}`)
	s.Send(t, protocol.FrameDispatch, protocol.DispatchFrame{Dispatch: dispatch})
	eventually.True(t, "the runner to get the dispatch", func() bool { h, _, _ := run.seen(); return len(h) == 1 })
	handled, servers, _ := run.seen()
	if !bytes.Equal(handled[0], dispatch) {
		t.Fatalf("runner got %s, want the dispatch as sent: %s", handled[0], dispatch)
	}
	if k, ok := servers.SignerKey(testcontrol.SigningKeyID); !ok || !k.Equal(fc.SigningKey().Public().(ed25519.PublicKey)) {
		t.Fatal("the welcome's signing key is not trusted")
	}
	if _, ok := servers.SignerKey("another"); ok {
		t.Fatal("a key no welcome carried is trusted")
	}

	s.Send(t, protocol.FrameCancel, protocol.CancelDispatch{DispatchID: "d-1"})
	eventually.True(t, "the cancel to reach the runner", func() bool { _, _, c := run.seen(); return slices.Equal(c, []string{"d-1"}) })

	run.mu.Lock()
	run.err = fmt.Errorf("%w: %w", ErrUnverified, &protocol.Error{Code: protocol.CodeBadSignature, Message: "no"})
	run.mu.Unlock()
	s.Send(t, protocol.FrameDispatch, protocol.DispatchFrame{Dispatch: []byte(`{"dispatch_id":"d-2"}`)})
	var rej protocol.Reject
	if err := s.Next(t, protocol.FrameReject).DecodeBody(&rej); err != nil || rej.Error.Code != protocol.CodeBadSignature {
		t.Fatalf("reject = %+v, %v; want code %s", rej, err, protocol.CodeBadSignature)
	}

	var hb protocol.Heartbeat
	if err := s.Next(t, protocol.FrameHeartbeat).DecodeBody(&hb); err != nil || hb.InFlight != 3 {
		t.Fatalf("heartbeat = %+v, %v; want in_flight 3", hb, err)
	}
	if got := a.heartbeat(); got != 100*time.Millisecond {
		t.Fatalf("heartbeat interval %s, want the welcome's 100ms", got)
	}

	a.Deliver(store.Pending{DispatchID: "d-3", Result: []byte(`{"dispatch_id":"d-3"}`), Output: []byte("out")})
	for {
		var rf protocol.ResultFrame
		if err := s.Next(t, protocol.FrameResult).DecodeBody(&rf); err != nil {
			t.Fatal(err)
		}
		if string(rf.Result) == `{"dispatch_id":"d-3"}` {
			if string(rf.Output) != "out" {
				t.Fatalf("output %q, want out", rf.Output)
			}
			break
		}
	}
}

// TestSessionEnds: a server that closes the session with code 2, or says
// bye with node_revoked, ends Run with ErrRevoked; a bye for any other
// reason makes the agent come back with a new session.
func TestSessionEnds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *testcontrol.Session)
	}{
		{"closed with code 2", func(t *testing.T, s *testcontrol.Session) { s.Close(quic.ApplicationErrorCode(2)) }},
		{"bye node_revoked", func(t *testing.T, s *testcontrol.Session) {
			s.Send(t, protocol.FrameBye, protocol.Bye{Error: protocol.ErrorBody{Code: "node_revoked", Message: "revoked"}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := testcontrol.Start(t, testcontrol.DefaultConfig())
			id, dir := enroll(t, fc)
			a := startAgent(t, fc, id, dir, &fakeRunner{}, &fakeBox{})
			tc.end(t, fc.NextSession(t))
			select {
			case <-a.ended:
				if !errors.Is(a.err, ErrRevoked) {
					t.Fatalf("Run = %v, want ErrRevoked", a.err)
				}
			case <-time.After(testcontrol.Timeout):
				t.Fatal("Run went on after the node was revoked")
			}
		})
	}
	t.Run("bye shutting down", func(t *testing.T) {
		t.Parallel()
		fc := testcontrol.Start(t, testcontrol.DefaultConfig())
		id, dir := enroll(t, fc)
		a := startAgent(t, fc, id, dir, &fakeRunner{}, &fakeBox{})
		s := fc.NextSession(t)
		s.Send(t, protocol.FrameBye, protocol.Bye{Error: protocol.ErrorBody{Code: "shutting_down", Message: "bye"}})
		s.Ended(t)
		if again := fc.NextSession(t); again.Hello.Node != id.Node {
			t.Fatalf("new session from %q", again.Hello.Node)
		}
		select {
		case <-a.ended:
			t.Fatalf("Run ended: %v", a.err)
		default:
		}
	})
}

// logBuffer collects an agent's log lines for a test to search.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Contains(l.b.Bytes(), []byte(s))
}

// TestSessionRefusesServer: an agent ends a session whose welcome carries
// a signing key the pinned CA did not certify (and trusts no key of it),
// and will not talk to a peer whose certificate does not name a server.
func TestSessionRefusesServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cfg     func(*testcontrol.Config)
		why     string // in the agent's log
		session bool   // the fake sees a hello
	}{
		{"key of another CA", func(c *testcontrol.Config) { c.UncertifiedKey = true }, "not certified by the cluster CA", true},
		{"peer not a server", func(c *testcontrol.Config) { c.ServerRole = "node" }, "not a Writ server", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testcontrol.DefaultConfig()
			tc.cfg(&cfg)
			fc := testcontrol.Start(t, cfg)
			// Enrolled with the fake's CA, so the only fault is the one set.
			id, dir := enroll(t, fc)
			logs := &logBuffer{}
			a, err := New(Options{Servers: []string{fc.Addr()}, DataDir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))},
				id, &fakeRunner{}, &fakeBox{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan struct{})
			go func() { a.Run(ctx); close(ended) }()
			defer func() { cancel(); <-ended }()
			if tc.session {
				fc.NextSession(t).Ended(t)
			}
			eventually.True(t, "the agent to log why it refused: "+tc.why, func() bool { return logs.contains(tc.why) })
			if _, ok := a.keys.SignerKey(testcontrol.SigningKeyID); ok {
				t.Fatal("a key of the refused server is trusted")
			}
		})
	}
}
