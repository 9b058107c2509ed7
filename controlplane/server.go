package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/quic-go/quic-go"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/keyring"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// Server is one control-plane server: Raft, the FSM, and the HTTP API.
type Server struct {
	// yielding is set while yieldLeadership hands the leadership on.
	yielding atomic.Bool
	// ticksIdle counts the ticks not proposed, nothing being due (tick).
	ticksIdle atomic.Int64
	// space is what this server knows of its disk (diskspace.go).
	space    *diskSpace
	cfg      Config
	log      *slog.Logger
	fsm      *fsm.FSM
	reads    fsm.Reader // the FSM's read side (not its State): every lookup of the API, the dashboard and the sessions
	node     *raftnode.Node
	ledger   *ledger.Log
	keys     *keyring.Keyring
	verifier *protocol.Verifier
	catalog  *catalog
	http     *http.Server
	ln       net.Listener
	gate     *admitGate
	cpu      cpuSlots
	fails    *failLimiter
	metrics  *metrics
	// fleet and agents serve node sessions; nil without AgentAddr.
	fleet  *fleet
	remote remoteBeats // other servers' node heartbeats, briefly kept
	agents *quic.Listener
	dash   *web.Dashboard // the dashboard (dashboard.go)
	mux    *routeMux      // the API's routes (api.go)
	// cluster runs discovery and forwarding; nil for a single server.
	cluster *cluster
	ready   readiness // what /v1/health checks beyond leader and log (ready.go)
	hooks   *webhooks // approval notifications (webhooks.go); nil without any

	stop      chan struct{}
	done      sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	// noStopSnapshot makes Close stop as a crash would, without the
	// snapshot of snapshotOnStop (tests of a lagging replica).
	noStopSnapshot bool
	// beforePropose, set by tests only, runs between an admission's or an
	// approval's check and its proposal (authcheck.go).
	beforePropose atomic.Pointer[func(fsm.MsgType)]
}

// New opens the data directory and starts Raft. Serve starts the API.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	// Listen first: a taken address is an error now, not a server that
	// appears to run while another process receives its requests.
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("controlplane: API address: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			ln.Close()
		}
	}()
	krPath := cfg.KeyringFile
	if krPath == "" {
		krPath = filepath.Join(cfg.DataDir, "keyring")
	}
	kr, err := keyring.Load(krPath, cfg.Dev)
	if err != nil {
		return nil, fmt.Errorf("controlplane: keyring: %w", err)
	}
	tlsCfg, err := serverTLS(cfg)
	if err != nil {
		return nil, err
	}
	// Servers forwarding a write present their certificate; clients need none.
	apiTLS := &tls.Config{Certificates: tlsCfg.Certificates, MinVersion: tls.VersionTLS12, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: tlsCfg.ClientCAs}
	lg, err := openLedger(cfg, log)
	if err != nil {
		return nil, err
	}
	f, err := fsm.New(cfg.FSM, lg)
	if err != nil {
		lg.Close()
		return nil, err
	}
	f.SetLogger(log)
	verifyCfg := cfg.Verify
	if verifyCfg.Now == nil {
		verifyCfg.Now = time.Now
	}
	v, err := protocol.NewVerifier(verifyCfg)
	if err != nil {
		lg.Close()
		return nil, err
	}
	groupSize := newGroupSize()
	space := newDiskSpace()
	node, err := raftnode.Start(raftnode.Config{
		ID: cfg.ID, Dir: cfg.DataDir, Bind: cfg.RaftAddr, TLS: tlsCfg, Bootstrap: cfg.Bootstrap, Logger: log,
		CommitTimeout: cfg.RaftCommitTimeout, LogStore: cfg.RaftLogStore,
		HeartbeatTimeout: cfg.raftTimeouts, ElectionTimeout: cfg.raftTimeouts, LeaderLeaseTimeout: cfg.raftTimeouts,
		GroupSizes: func(n int) { groupSize.Observe(float64(n)) },
		OnLogSpace: space.logAppend,
	}, f)
	if err != nil {
		lg.Close()
		return nil, err
	}
	s := &Server{
		space: space, cfg: cfg, log: log, fsm: f, reads: f.Reader(), node: node, ledger: lg, keys: kr, verifier: v, catalog: newCatalog(f.Reader()), stop: make(chan struct{}),
		gate: newAdmitGate(cfg.MaxInFlight, cfg.MaxInFlightBytes), cpu: newCPUSlots(), fails: newFailLimiter(cfg.FailuresPerSecond, cfg.FailureBurst, cfg.FailureHeld, 100_000),
		metrics: newMetrics(node.Raft, groupSize, f.Reader().Queued),
	}
	f.OnNoSpace(s.noteFSMNoSpace)
	if cfg.AgentAddr != "" {
		if cfg.AgentAddr == cfg.HTTPAddr {
			// The same port number for UDP as the API's TCP (dev: :0 picks it).
			cfg.AgentAddr = ln.Addr().String()
			s.cfg.AgentAddr = cfg.AgentAddr
		}
		if err := s.listenAgents(tlsCfg.Certificates[0]); err != nil {
			node.Shutdown()
			lg.Close()
			return nil, err
		}
	}
	s.metrics.reg.MustRegister(outputMetrics(f.Reader())...)
	s.observeLeader()
	if len(cfg.Webhooks) > 0 {
		s.hooks = newWebhooks(s, cfg.Webhooks)
		go s.hooks.run()
	}
	if !cfg.Dev {
		ln = newHandshakeListener(ln, apiTLS, s.metrics.handshakesShed.Inc)
	}
	s.ln = ln
	if cfg.Cluster.clustered() {
		if err := s.startCluster(tlsCfg); err != nil {
			node.Shutdown()
			lg.Close()
			return nil, err
		}
	}
	s.done.Add(1)
	go s.syncLedger()
	ok = true
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      cfg.MaxWait + 15*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// observeLeader counts leader changes seen by this server.
func (s *Server) observeLeader() {
	ch := make(chan raft.Observation, 16)
	s.node.Raft.RegisterObserver(raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	}))
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			select {
			case <-s.stop:
				return
			case <-ch:
				s.metrics.leaderChange.Inc()
			}
		}
	}()
}

// serverTLS loads the server's certificate, which Raft and the API use; a dev
// server creates a cluster CA and certificate on first start.
func serverTLS(cfg Config) (*tls.Config, error) {
	dir := filepath.Join(cfg.DataDir, "tls")
	caPath, caKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca.key")
	certPath, keyPath := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	if !cfg.Dev {
		caPath, certPath, keyPath = cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile
	}
	if _, err := os.Stat(caPath); errors.Is(err, os.ErrNotExist) && cfg.Dev {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		now := time.Now()
		ca, caKeyPEM, err := pki.NewCA("writ cluster CA", now, 10*365*24*time.Hour)
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM, err := ca.Issue(pki.RoleServer, cfg.ID, []string{"127.0.0.1", "localhost"}, now, 365*24*time.Hour)
		if err != nil {
			return nil, err
		}
		for path, b := range map[string][]byte{caPath: ca.PEM, caKey: caKeyPEM, certPath: certPEM, keyPath: keyPEM} {
			if err := secretfile.Write(path, b); err != nil {
				return nil, err
			}
		}
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("controlplane: cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("controlplane: cluster CA file holds no certificate")
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("controlplane: server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, fmt.Errorf("controlplane: server certificate is not from the cluster CA: %w", err)
	}
	if role, id, err := pki.Identity(leaf); err != nil || role != pki.RoleServer || id != cfg.ID {
		return nil, fmt.Errorf("controlplane: server certificate must name writ://server/%s", cfg.ID)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ClientCAs: pool}, nil
}

// Serve serves the API on the address New listened on, until Close.
func (s *Server) Serve() error {
	s.done.Add(2)
	go s.everyAsLeader(s.cfg.TickInterval, s.tick)
	go s.publishLoop()
	if s.agents != nil {
		s.done.Add(2)
		go s.acceptAgents()
		go s.watchSessions()
	}
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Addr is the address the API listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// WaitLeader waits until the cluster has a leader.
func (s *Server) WaitLeader(ctx context.Context) error {
	_, err := s.node.WaitLeader(ctx)
	return err
}

// Close stops the API and Raft; closing again returns the first answer.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx) })
	return s.closeErr
}

func (s *Server) close(ctx context.Context) error {
	close(s.stop)
	if s.agents != nil {
		s.fsm.OnNodeChange(nil)
		s.agents.Close()
		s.fleet.closeAll()
	}
	err := s.http.Shutdown(ctx)
	s.done.Wait()
	if !s.noStopSnapshot {
		s.snapshotOnStop()
	}
	if rerr := s.node.Shutdown(); err == nil {
		err = rerr
	}
	if lerr := s.ledger.Close(); err == nil {
		err = lerr
	}
	return err
}

// snapshotOnStop takes a snapshot of everything applied before Raft stops, so
// that the next start replays no entry this server applied already: a
// restart is quicker, and an upgraded binary never re-applies, under rules
// that may have changed, entries whose receipts the ledger on disk holds
// (docs/controlplane.md, "Upgrades"). A failure is logged: the log still
// has every entry.
func (s *Server) snapshotOnStop() {
	if err := s.node.Raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
		s.log.Warn("no snapshot at stop; the next start replays the log since the last one", "err", err)
	}
}

// openLedger opens the receipt log in DataDir/ledger, checking it against its
// last signed checkpoint; a log that disagrees with one refuses to open.
//
// The store defers fsync (ledger.DiskConfig.DeferSync), so that no FSM apply
// waits for one; syncLedger syncs it in the background. Every receipt is a
// function of the Raft log, which a quorum fsynced before the receipt was
// made, and every snapshot carries all receipts: after a crash the store
// opens at its last sync, and restoring the snapshot and replaying the log
// append what it lost (docs/ledger.md).
func openLedger(cfg Config, log *slog.Logger) (*ledger.Log, error) {
	store, err := ledger.OpenDisk(ledger.DiskConfig{Dir: filepath.Join(cfg.DataDir, "ledger"), DeferSync: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("controlplane: receipt log: %w", err)
	}
	lc := ledger.DefaultConfig()
	lc.VerifierKey = cfg.LedgerVerifierKey
	lg, err := ledger.Open(context.Background(), store, lc)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("controlplane: receipt log: %w", err)
	}
	return lg, nil
}

// ledgerSyncInterval is the least time between two syncs of the receipt
// store under load; after a quiet spell a new receipt is synced at once.
// Nothing waits for these syncs (Raft has the receipts durably), but each is
// three fsyncs that compete with Raft's own for the disk and, on a virtual
// machine, cost CPU: at 2 ms they were a fifth of a fleet server's CPU and
// added milliseconds to the dispatch latency's tail.
const ledgerSyncInterval = 200 * time.Millisecond

// syncLedger makes the receipts the FSM appends durable, off the apply path:
// as soon as receipts are added after a quiet spell, and at most every
// ledgerSyncInterval under load, each sync covering everything appended
// before it. Close syncs the rest. A failed sync stops the store, whose next
// append then stops the FSM.
func (s *Server) syncLedger() {
	defer s.done.Done()
	var last time.Time
	for {
		added := s.reads.ReceiptsChanged()
		last = time.Now()
		if err := s.ledger.Sync(); err != nil {
			s.log.Error("receipt log: sync", "err", err)
			return
		}
		select {
		case <-s.stop:
			return
		case <-added:
		}
		if wait := ledgerSyncInterval - time.Since(last); wait > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(wait):
			}
		}
	}
}

// everyAsLeader runs f every interval while this server leads, until Close.
func (s *Server) everyAsLeader(interval time.Duration, f func()) {
	defer s.done.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.isLeader() {
			f()
		}
	}
}

// publishLoop publishes a checkpoint as soon as receipts are added after a
// quiet spell, and at most once per PublishInterval under load: one waiting
// intent gets its proof within a Raft round, and a busy ledger is not
// flooded with checkpoints.
func (s *Server) publishLoop() {
	defer s.done.Done()
	t := time.NewTicker(s.cfg.PublishInterval)
	defer t.Stop()
	var last time.Time
	for {
		added := s.reads.ReceiptsChanged()
		if s.isLeader() {
			if wait := s.cfg.PublishInterval - time.Since(last); wait > 0 {
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
			}
			if s.publish() {
				last = time.Now()
			}
		}
		select {
		case <-s.stop:
			return
		case <-added:
		case <-t.C: // a leadership change, or receipts applied before this server led
		}
	}
}

// publish signs a checkpoint of the receipts applied so far, when there are
// new ones, and puts it through Raft, so that no replica shows a checkpoint
// ahead of what is committed.
func (s *Server) publish() bool {
	size := s.ledger.Size()
	if c, _, ok := s.ledger.Latest(); (ok && c.Size >= size) || size == 0 {
		return false
	}
	root, err := s.ledger.Root(size)
	if err != nil {
		s.log.Error("checkpoint: root", "err", err)
		return false
	}
	note, err := ledger.SignCheckpoint(ledger.Checkpoint{Origin: s.cfg.LedgerSigner.Name(), Size: size, Root: root}, s.cfg.LedgerSigner)
	if err != nil {
		s.log.Error("checkpoint: sign", "err", err)
		return false
	}
	s.proposeOwn(fsm.MsgPutCheckpoint, fsm.PutCheckpoint{Note: note})
	return true
}

// tick proposes the leader's clock, so that expiry and pruning happen in the
// log, identically everywhere, when the FSM holds something due by then, or
// when Raft committed entries of its own after the FSM's last (a new term's
// first entry, a membership change), which the FSM does not apply: a
// server's readiness waits for its FSM to reach the commit index
// (caughtUp). A tick with neither would change nothing but the FSM's clock,
// and cost every server a log write.
func (s *Server) tick() {
	now := s.now()
	if !s.reads.TickDue(now) && s.reads.Index() >= s.node.Raft.CommitIndex() {
		s.ticksIdle.Add(1)
		return
	}
	s.proposeOwn(fsm.MsgTick, fsm.Tick{At: now})
}

// proposeOwn applies a command of the leader's own, logging what is not a loss
// of leadership.
func (s *Server) proposeOwn(t fsm.MsgType, cmd any) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.apply(ctx, t, cmd); err != nil && !errors.Is(err, raftnode.ErrNotLeader) {
		s.log.Warn("proposing "+t.String(), "err", err)
	}
}

func (s *Server) isLeader() bool { return s.node.Raft.State() == raft.Leader }

func (s *Server) now() time.Time { return s.verifier.Config().Now().UTC() }
