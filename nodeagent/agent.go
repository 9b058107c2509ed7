package nodeagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// Version is reported to the control plane in hello; cmd/writ sets it.
var Version = "dev"

// Options configure a running agent.
type Options struct {
	// Servers are the control-plane servers, as host:port: the agent dials
	// them over QUIC (UDP) in turn, starting at a random one.
	Servers []string
	// DataDir holds the identity (see Identity) and the store.
	DataDir string
	// Tiers are the sandbox tiers this host really has (probed); Tools the
	// node owner's allowlist; Concurrency the dispatches run at once.
	Tiers       []string
	Tools       []protocol.ToolRef
	Concurrency int
	// Labels are the owner's labels of this node (its token's win).
	Labels map[string]string
	Logger *slog.Logger
}

// Agent keeps a session with one server of the control plane at a time,
// runs what it is sent through its runner, and delivers every result until a
// server acknowledges it.
type Agent struct {
	opts Options
	log  *slog.Logger
	run  runner
	box  outbox
	keys trustedKeys
	idmu sync.RWMutex
	id   *Identity
	// pending is the TLS key of a renewal asked for at pendingAt.
	pending   *ecdsa.PrivateKey
	pendingAt time.Time
	hbeat     atomic.Int64 // heartbeat interval, ns, from the last welcome
	active    atomic.Pointer[conn]
}

// New returns an agent for an enrolled identity. run executes dispatches and
// box is where their signed results wait (the Executor and its Store).
func New(opts Options, id *Identity, run runner, box outbox) (*Agent, error) {
	if len(opts.Servers) == 0 {
		return nil, errors.New("nodeagent: at least one server address is required")
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	a := &Agent{opts: opts, log: log.With("node", id.Node), run: run, box: box, id: id}
	a.hbeat.Store(int64(10 * time.Second))
	return a, nil
}

func (a *Agent) identity() *Identity {
	a.idmu.RLock()
	defer a.idmu.RUnlock()
	return a.id
}

func (a *Agent) heartbeat() time.Duration { return time.Duration(a.hbeat.Load()) }

// Deliver sends a signed result, and beside it the captured output it
// commits to, on the live session, if there is one; the store keeps both
// either way until the result is acknowledged. The executor calls it as
// soon as a result is written.
func (a *Agent) Deliver(p store.Pending) {
	if c := a.active.Load(); c != nil {
		if err := c.write(protocol.FrameResult, protocol.ResultFrame{Result: p.Result, Output: p.Output}); err != nil {
			c.log.Debug("result not sent; it stays in the outbox", "err", err)
		}
	}
}

// Run keeps a session open until ctx ends or the node is revoked, failing
// over between servers with jittered exponential backoff.
func (a *Agent) Run(ctx context.Context) error {
	next := rand.IntN(len(a.opts.Servers))
	backoff := 200 * time.Millisecond
	for {
		addr := a.opts.Servers[next%len(a.opts.Servers)]
		next++
		began := time.Now()
		err := a.session(ctx, addr)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrRevoked):
			return err
		}
		a.log.Warn("session with server ended", "server_addr", addr, "err", err)
		if time.Since(began) > time.Minute {
			backoff = 200 * time.Millisecond
		}
		wait := backoff/2 + rand.N(backoff)
		backoff = min(2*backoff, 15*time.Second)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// session runs one session: hello, welcome, the outbox, then frames until
// the connection ends.
func (a *Agent) session(ctx context.Context, addr string) error {
	c, err := a.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer c.qc.CloseWithError(0, "")
	id := a.identity()
	hello := protocol.Hello{Node: id.Node, Version: Version, OS: runtime.GOOS, Arch: runtime.GOARCH,
		Tiers: a.opts.Tiers, Tools: a.opts.Tools, Concurrency: a.opts.Concurrency, Labels: a.opts.Labels}
	if err := c.write(protocol.FrameHello, hello); err != nil {
		return err
	}
	c.stream.SetReadDeadline(time.Now().Add(15 * time.Second))
	f, err := protocol.ReadFrame(c.stream)
	c.stream.SetReadDeadline(time.Time{})
	if err != nil {
		return closeReason(c, err)
	}
	if err := a.welcome(f, id.Pool); err != nil {
		return err
	}
	c.log.Info("session began")
	a.active.Store(c)
	defer a.active.CompareAndSwap(c, nil)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go a.keepAlive(sctx, c)
	go func() {
		<-sctx.Done() // the agent stopping, or the session over: unblock the reader
		c.qc.CloseWithError(0, "")
	}()
	a.flush(c)
	return a.readLoop(ctx, c)
}

func (a *Agent) welcome(f protocol.Frame, pool *x509.CertPool) error {
	if f.Type == protocol.FrameBye {
		return byeError(f)
	}
	var w protocol.Welcome
	if f.Type != protocol.FrameWelcome {
		return fmt.Errorf("expected welcome, got %q", f.Type)
	}
	if err := f.DecodeBody(&w); err != nil {
		return err
	}
	for _, k := range w.Keys {
		if err := a.keys.add(k, pool, time.Now()); err != nil {
			return fmt.Errorf("the server's key is not certified by the cluster CA: %w", err)
		}
	}
	if hb := time.Duration(w.HeartbeatMS) * time.Millisecond; hb >= 100*time.Millisecond && hb <= 25*time.Second {
		a.hbeat.Store(int64(hb))
	}
	return nil
}

// flush sends every result no server has acknowledged yet.
func (a *Agent) flush(c *conn) {
	pending, err := a.box.Outbox()
	if err != nil {
		a.log.Error("outbox unreadable", "err", err)
		return
	}
	for _, p := range pending {
		if err := c.write(protocol.FrameResult, protocol.ResultFrame{Result: p.Result, Output: p.Output}); err != nil {
			return
		}
	}
}

func byeError(f protocol.Frame) error {
	var b protocol.Bye
	_ = f.DecodeBody(&b)
	if b.Error.Code == "node_revoked" {
		return ErrRevoked
	}
	return fmt.Errorf("server ended the session: %s: %s", b.Error.Code, b.Error.Message)
}

func splitHost(addr string) (string, string, error) {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		addr = u.Host
	}
	return net.SplitHostPort(addr)
}
