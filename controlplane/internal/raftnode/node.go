package raftnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
)

// Config describes one server's Raft.
type Config struct {
	ID        string
	Dir       string      // data directory; Raft keeps raft/raft.db and raft/snapshots in it
	Bind      string      // host:port to listen on for Raft
	Advertise net.Addr    // address peers dial; defaults to the bound address
	TLS       *tls.Config // certificate (writ://server/ID), RootCAs and ClientCAs
	Bootstrap bool        // form a new cluster of Peers (or of this server alone)
	Peers     []raft.Server
	Logger    *slog.Logger
	// Tuning; zero values take Raft's defaults, but for CommitTimeout.
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	SnapshotThreshold                                     uint64
	SnapshotInterval                                      time.Duration
	TrailingLogs                                          uint64
	// CommitTimeout is how long the leader lets a follower go without an
	// AppendEntries when no entries flow. Default DefaultCommitTimeout.
	CommitTimeout time.Duration
	// Group bounds group commit (Propose); the zero value takes
	// DefaultGroupConfig.
	Group GroupConfig
	// GroupSizes, when set, is told the number of commands of every entry
	// Propose puts through Raft.
	GroupSizes func(commands int)
	// LogStore is LogStoreBolt (the default, ""); LogStoreWAL and
	// LogStoreRaftBoltDB exist only so that benchmarks can compare the
	// stores in one run.
	LogStore string
	// OnLogSpace, when set, is told after each append to the log whether
	// the store refused it for want of space (true) or stored it (false).
	OnLogSpace func(full bool)
}

// The log stores Start can open.
const (
	// LogStoreBolt is LogStore, in DIR/raft/raft.db. A raft-wal directory
	// found at DIR/raft/wal is migrated into it first (MigrateWAL).
	LogStoreBolt = "bolt"
	// LogStoreWAL is hashicorp/raft-wal v0.4.0 in DIR/raft/wal, which a
	// crash during a tail truncation at a segment boundary can leave
	// unopenable (hashicorp/raft-wal#31): for benchmarks only.
	LogStoreWAL = "raft-wal"
	// LogStoreRaftBoltDB is hashicorp/raft-boltdb/v2 in DIR/raft/raft-boltdb.db:
	// for benchmarks only.
	LogStoreRaftBoltDB = "raft-boltdb"
)

// LogStores are the values Config.LogStore takes.
var LogStores = []string{LogStoreBolt, LogStoreWAL, LogStoreRaftBoltDB}

// DefaultCommitTimeout is Raft's own. A follower learns that an entry
// committed only from the leader's next AppendEntries; the commit beacon
// (beacon.go) has the transport send one, with no entry (notice.go), at once
// after the last entry in flight is applied, so this timeout only bounds how
// late a follower learns of commits made other than by Apply and Propose
// (Raft's own entries). A shorter one costs an empty
// AppendEntries to each follower per one to two of it, even when idle
// (measured, 3 idle servers: 2 ms took 10.6 % of a core, 50 ms 2.1 %).
const DefaultCommitTimeout = 50 * time.Millisecond

// Validate reports a configuration that cannot run.
func (c *Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("raftnode: an ID is required")
	case c.Dir == "":
		return errors.New("raftnode: a data directory is required")
	case c.Bind == "":
		return errors.New("raftnode: a bind address is required")
	case c.TLS == nil:
		return errors.New("raftnode: TLS is required; Raft traffic is never plaintext")
	case c.LogStore != "" && !slices.Contains(LogStores, c.LogStore):
		return fmt.Errorf("raftnode: unknown log store %q (one of %v)", c.LogStore, LogStores)
	case c.Group != GroupConfig{}:
		return c.Group.Validate()
	}
	return nil
}

// Batching and caching of the log. Both only change how entries are grouped
// and where they are read from, never what is durable: an entry is still
// fsynced by a quorum before it commits.
const (
	maxBatch = 256  // entries per disk write and per AppendEntries (Raft's default is 64)
	logCache = 1024 // recent entries kept in memory for replication and apply
)

// Node is a running Raft server with its FSM.
type Node struct {
	Raft   *raft.Raft
	FSM    *fsm.FSM
	log    logStore
	tr     *noticeTransport
	group  *grouper
	beacon *commitBeacon
}

// Start opens the durable stores and starts Raft.
func Start(cfg Config, f *fsm.FSM) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	hl := hclogFor(cfg.Logger, "raft")
	w, err := openLogStore(cfg, hl)
	if err != nil {
		return nil, err
	}
	w = watchSpace(w, cfg.OnLogSpace)
	closeStores := func() { w.Close() }
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "raft"), 3, hl)
	if err != nil {
		closeStores()
		return nil, err
	}
	stream, err := newTLSStream(cfg.Bind, cfg.Advertise, cfg.TLS, cfg.Logger)
	if err != nil {
		closeStores()
		return nil, err
	}
	tr := newNoticeTransport(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
	}))
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hl
	// Proposals queue in a buffer the leader drains in one batch: one disk
	// write and one round to the followers for many concurrent proposals.
	// Up to maxBatch of them, so that at high concurrency a batch takes all
	// waiting proposals rather than a quarter of them.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = maxBatch
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	rc.CommitTimeout = DefaultCommitTimeout
	if cfg.CommitTimeout > 0 {
		rc.CommitTimeout = cfg.CommitTimeout
	}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(w, w, snaps)
		if err != nil {
			tr.Close()
			closeStores()
			return nil, err
		}
		if !has {
			peers := cfg.Peers
			if len(peers) == 0 {
				peers = []raft.Server{{ID: rc.LocalID, Address: tr.LocalAddr()}}
			}
			if err := raft.BootstrapCluster(rc, w, w, snaps, tr, raft.Configuration{Servers: peers}); err != nil {
				tr.Close()
				closeStores()
				return nil, fmt.Errorf("raftnode: bootstrap: %w", err)
			}
		}
	}
	// The leader reads every new entry back to send it to each follower, and
	// a follower to apply it: from memory, not with a read from disk each.
	cached, err := raft.NewLogCache(logCache, w)
	if err != nil {
		tr.Close()
		closeStores()
		return nil, err
	}
	r, err := raft.NewRaft(rc, f, cached, w, snaps, tr)
	if err != nil {
		tr.Close()
		closeStores()
		return nil, err
	}
	gc := cfg.Group
	if gc == (GroupConfig{}) {
		gc = DefaultGroupConfig()
	}
	b := newCommitBeacon(func() { tr.notice(r.CommitIndex()) })
	g := newGrouper(r, gc)
	g.observe = cfg.GroupSizes
	g.beacon = b
	return &Node{Raft: r, FSM: f, log: w, tr: tr, group: g, beacon: b}, nil
}

// Addr is the address peers reach this node's Raft at.
func (n *Node) Addr() raft.ServerAddress { return n.tr.LocalAddr() }

// ErrNotLeader is returned by Apply on a server that is not the leader.
var ErrNotLeader = errors.New("raftnode: not the leader")

// Apply proposes one command and waits until it is applied here, returning
// the FSM's result and the entry's index.
func (n *Node) Apply(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, uint64, error) {
	data, err := fsm.Encode(t, cmd)
	if err != nil {
		return fsm.Result{}, 0, err
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	n.beacon.begin()
	fut := n.Raft.Apply(data, timeout)
	err = fut.Error()
	n.beacon.end(err == nil)
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fsm.Result{}, 0, ErrNotLeader
		}
		return fsm.Result{}, 0, err
	}
	res, _ := fut.Response().(fsm.Result)
	return res, fut.Index(), nil
}

// WaitLeader waits until some server leads, and returns its id.
func (n *Node) WaitLeader(ctx context.Context) (string, error) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if _, id := n.Raft.LeaderWithID(); id != "" {
			return string(id), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

// Shutdown stops Raft and closes the stores.
func (n *Node) Shutdown() error {
	n.group.close()
	err := n.Raft.Shutdown().Error()
	n.beacon.close()
	n.tr.Close()
	if cerr := n.log.Close(); err == nil {
		err = cerr
	}
	return err
}
