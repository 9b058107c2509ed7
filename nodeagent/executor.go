package nodeagent

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
)

// Errors of Handle.
var (
	// ErrClosed is returned by Handle once the Executor is closed.
	ErrClosed = errors.New("nodeagent: executor closed")
	// ErrUndecodable wraps the protocol error of a dispatch that could not
	// be decoded at all: the session answers it with a reject frame, as it
	// does ErrUnverified. Any other error (the store failed, the wait for a slot
	// was cancelled, the Executor closed) means the dispatch was not
	// recorded, and it may run when pushed again.
	ErrUndecodable = errors.New("nodeagent: undecodable dispatch")
	// ErrUnverified wraps the protocol error of a dispatch that no trusted
	// server signed as it is (unknown_key, bad_signature,
	// payload_hash_mismatch). Like ErrUndecodable it is answered with a
	// reject frame and nothing is recorded under the id it claims.
	ErrUnverified = errors.New("nodeagent: dispatch not signed by a trusted server")
)

// ExecutorConfig is what an Executor needs: who the node is, its key, its
// durable store, what its owner allows, the tiers it probed, and how it
// checks time.
type ExecutorConfig struct {
	// NodeID is this node's id: dispatches must be addressed to it, and
	// results are signed with key_id = NodeID.
	NodeID string
	// Key is the node's Ed25519 signing key.
	Key ed25519.PrivateKey
	// Store is the node's durable nonce store, journal and outbox.
	Store *store.Store
	// Allowlist is the node owner's tool allowlist.
	Allowlist *Allowlist
	// Tiers are the probed tiers and their drivers.
	Tiers *Tiers
	// Verifier checks dispatches: its clock, TTL and skew apply.
	Verifier *protocol.Verifier
	// Concurrency is how many tools run at once (at least 1).
	Concurrency int
	// MaxDiskBytes is the largest limits.disk_bytes a tool may run with;
	// 0 means DefaultMaxDiskBytes.
	MaxDiskBytes int64
	// WorkDir is an absolute directory, private to the agent, in which each
	// run gets a fresh workspace that is removed after the run (and, for a
	// run a crash cut short, by the next NewExecutor).
	WorkDir string
	// Env gives values for the names the manifests' env allowlists list.
	Env map[string]string
	// Now is the clock of the results' timestamps; nil means the
	// Verifier's clock.
	Now func() time.Time
	// Logger receives one line per refusal and per run; nil discards.
	Logger *slog.Logger
	// OnResult, if set, is called with every result as soon as it is
	// signed, so that the session can send it at once; it must not block.
	// A refusal is already in the outbox then. A run's result is being
	// committed to the outbox while it is sent, so that the server's
	// commit of it and the node's overlap: a crash between the send and the
	// node's commit leaves the run journaled as started, which Recover
	// reports as unknown, and the server, which may have recorded the real
	// result already, refuses that unknown as a conflict (result_conflict).
	// Either way the run is never repeated and its one outcome stands.
	OnResult func(p store.Pending)
}

// Validate reports a configuration the Executor cannot work with.
func (c ExecutorConfig) Validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("nodeagent: NodeID is empty")
	case len(c.Key) != ed25519.PrivateKeySize:
		return errors.New("nodeagent: Key is not an Ed25519 private key")
	case c.Store == nil || c.Allowlist == nil || c.Tiers == nil || c.Verifier == nil:
		return errors.New("nodeagent: Store, Allowlist, Tiers and Verifier are required")
	case c.Concurrency < 1:
		return errors.New("nodeagent: Concurrency must be at least 1")
	case !filepath.IsAbs(c.WorkDir):
		return fmt.Errorf("nodeagent: WorkDir %q must be an absolute path", c.WorkDir)
	}
	return nil
}

// Executor takes signed dispatches from the session, re-verifies them, runs
// each accepted one exactly once in its sandbox, and leaves a signed result
// for every dispatch it could read in the outbox. It is safe for concurrent
// use: the session calls Handle in one goroutine per dispatch.
type Executor struct {
	cfg    ExecutorConfig
	now    func() time.Time
	log    *slog.Logger
	sem    chan struct{}
	ctx    context.Context // cancelled by Close: stops running tools
	cancel context.CancelFunc
	runs   sync.WaitGroup

	mu       sync.Mutex
	handling map[string]bool // dispatch ids inside Handle
	// completing holds the runs whose result was sent and is being
	// committed to the outbox; true once the server acknowledged it, which
	// can happen before the commit is done: the ack is applied after it.
	completing map[string]bool
	// running are the runs under way, early the dispatches canceled
	// before they began (cancel.go).
	running map[string]*runStop
	early   map[string]time.Time
	waiting map[string]chan struct{} // dispatches waiting for a slot
	closed  bool

	workspaces *workspaces
}

// NewExecutor returns an Executor for a valid configuration. It creates
// WorkDir (mode 0700) if needed.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := mkdirPrivate(cfg.WorkDir); err != nil {
		return nil, err
	}
	left, err := removeWorkspaces(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: workspaces left by an earlier run: %w", err)
	}
	x := &Executor{cfg: cfg, now: cfg.Now, log: cfg.Logger, sem: make(chan struct{}, cfg.Concurrency),
		handling: map[string]bool{}, completing: map[string]bool{}, running: map[string]*runStop{}, early: map[string]time.Time{},
		waiting: map[string]chan struct{}{}}
	if x.now == nil {
		x.now = cfg.Verifier.Config().Now
	}
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	x.workspaces = &workspaces{dir: cfg.WorkDir, max: cfg.Concurrency, log: x.log}
	if left > 0 {
		x.log.Info("removed the workspaces of runs cut short", "count", left)
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	return x, nil
}

// Outbox returns the results no server has acknowledged yet (the store's).
func (x *Executor) Outbox() ([]store.Pending, error) { return x.cfg.Store.Outbox() }

// Ack removes an acknowledged result from the outbox. A result still being
// committed is removed once it is.
func (x *Executor) Ack(dispatchID string) error {
	x.mu.Lock()
	if _, ok := x.completing[dispatchID]; ok {
		x.completing[dispatchID] = true
		x.mu.Unlock()
		return nil
	}
	x.mu.Unlock()
	return x.cfg.Store.Ack(dispatchID)
}

// InFlight is the number of dispatches running now, for heartbeats.
func (x *Executor) InFlight() int { return len(x.sem) }

// Prune forgets nonces and finished journal entries past their time.
func (x *Executor) Prune() (int, error) { return x.cfg.Store.Prune(x.now()) }

// Close stops the tools still running (their results say so: status error,
// as they were killed) and waits until those results are recorded. Handle
// calls after Close return ErrClosed.
func (x *Executor) Close() {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.cancel()
	x.runs.Wait()
	x.workspaces.close()
}

// enter marks dispatch id as being handled; false if it already is (the
// same dispatch pushed twice at once) or the Executor is closed.
func (x *Executor) enter(id string) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false, ErrClosed
	}
	if x.handling[id] {
		return false, nil
	}
	x.handling[id] = true
	x.runs.Add(1)
	return true, nil
}

func (x *Executor) leave(id string) {
	x.mu.Lock()
	delete(x.handling, id)
	x.mu.Unlock()
	x.runs.Done()
}
