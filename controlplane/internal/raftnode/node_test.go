package raftnode

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/protocol"
)

type testCA struct {
	ca   *pki.CA
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca, _, err := pki.NewCA("test cluster", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testCA{ca, pool}
}

func (c *testCA) tls(t *testing.T, role, id string) *tls.Config {
	t.Helper()
	certPEM, keyPEM, err := c.ca.Issue(role, id, []string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: c.pool, ClientCAs: c.pool}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startNode(t *testing.T, ca *testCA, id, dir string, bootstrap bool) *Node {
	t.Helper()
	return startNodeWith(t, ca, id, dir, bootstrap, 0)
}

func startNodeWith(t *testing.T, ca *testCA, id, dir string, bootstrap bool, commitTimeout time.Duration) *Node {
	t.Helper()
	return startNodeStore(t, ca, id, dir, bootstrap, commitTimeout, "")
}

func startNodeStore(t *testing.T, ca *testCA, id, dir string, bootstrap bool, commitTimeout time.Duration, store string) *Node {
	t.Helper()
	f, err := fsm.New(fsm.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The lease as long as Raft allows (its heartbeat timeout): a leader
	// starved on a loaded machine (CI runs every package at once under
	// -race) keeps its place through a pause twice as long as with Raft's
	// 500 ms (a voter added during such a pause made it step down).
	n, err := Start(Config{
		ID: id, Dir: dir, Bind: "127.0.0.1:0", TLS: ca.tls(t, pki.RoleServer, id), Bootstrap: bootstrap,
		Logger: quiet(), HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLeaseTimeout: time.Second, CommitTimeout: commitTimeout, LogStore: store,
	}, f)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return n
}

func admitCmd(i int) *fsm.Admit {
	id := fmt.Sprintf("int-%d", i)
	return &fsm.Admit{
		At: time.Date(2026, 11, 22, 10, 0, i, 0, time.UTC), Intent: []byte(`{}`), ID: id, Tenant: "acme",
		Principal: "bot", RunID: "run", Tool: "echo", PayloadHash: protocol.HashBytes([]byte(id)),
		IdempotencyKey: id, ExpiresAt: time.Date(2026, 11, 22, 10, 10, 0, 0, time.UTC),
		Decision: fsm.Decision{Allow: true},
	}
}

// TestClusterReplicates: three servers over mutual TLS elect a leader, every
// command applies identically on each, and a follower refuses writes.
func TestClusterReplicates(t *testing.T) {
	ca := newTestCA(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := startNode(t, ca, "s1", t.TempDir(), true)
	defer a.Shutdown()
	if _, err := a.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := []*Node{a}
	for _, id := range []string{"s2", "s3"} {
		n := startNode(t, ca, id, t.TempDir(), false)
		defer n.Shutdown()
		if err := a.Raft.AddVoter(raft.ServerID(id), n.Addr(), 0, 10*time.Second).Error(); err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
		nodes = append(nodes, n)
	}
	var last uint64
	for i := 0; i < 50; i++ {
		res, idx, err := a.Apply(ctx, fsm.MsgAdmit, admitCmd(i))
		if err != nil || res.Err != nil {
			t.Fatalf("apply %d: %v %+v", i, err, res.Err)
		}
		last = idx
	}
	want, _ := a.FSM.Encode()
	for _, n := range nodes[1:] {
		eventually.True(t, fmt.Sprintf("%s to apply %d", n.Raft, last), func() bool { return n.FSM.Reader().Index() >= last })
		got, _ := n.FSM.Encode()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s's state differs from the leader's (index %d, want %d)", n.Raft, n.FSM.Reader().Index(), last)
		}
	}
	if _, _, err := nodes[1].Apply(ctx, fsm.MsgAdmit, admitCmd(99)); err != ErrNotLeader {
		t.Fatalf("apply on a follower: got %v, want ErrNotLeader", err)
	}
}

// TestPeerAuthorization: a client with no certificate, with one of another CA,
// or with an agent's certificate of this CA gets nothing from Raft's port.
func TestPeerAuthorization(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	n := startNode(t, ca, "s1", t.TempDir(), true)
	defer n.Shutdown()
	addr := string(n.Addr())
	other := newTestCA(t)
	for name, cfg := range map[string]*tls.Config{
		"no certificate":      {RootCAs: ca.pool, InsecureSkipVerify: true},
		"another CA":          other.tls(t, pki.RoleServer, "s9"),
		"an agent of this CA": ca.tls(t, pki.RoleNode, "node-1"),
	} {
		t.Run(name, func(t *testing.T) {
			cfg = cfg.Clone()
			cfg.InsecureSkipVerify = true
			cfg.MinVersion = tls.VersionTLS13
			c, err := tls.Dial("tcp", addr, cfg)
			if err != nil {
				return // refused during the handshake
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			// Speak Raft: a byte of RPC type and garbage. The server must
			// close the connection without answering.
			c.Write([]byte{0, 0, 0, 0})
			buf := make([]byte, 1)
			if k, err := c.Read(buf); err == nil {
				t.Fatalf("server answered %d bytes to an unauthorized peer", k)
			}
		})
	}
}

// TestRestartKeepsState: the log is durable; a restarted server rebuilds the
// same state from it.
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	// From raft-wal, the restart migrates the log (MigrateWAL).
	for _, store := range []string{LogStoreBolt, LogStoreWAL} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			testRestartKeepsState(t, store)
		})
	}
}

func testRestartKeepsState(t *testing.T, store string) {
	ca := newTestCA(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := startNodeStore(t, ca, "s1", dir, true, 0, store)
	n.WaitLeader(ctx)
	for i := 0; i < 20; i++ {
		if _, _, err := n.Apply(ctx, fsm.MsgAdmit, admitCmd(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 30; i++ {
		if _, _, err := n.Apply(ctx, fsm.MsgAdmit, admitCmd(i)); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := n.FSM.Encode()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m := startNode(t, ca, "s1", dir, true)
	defer m.Shutdown()
	m.WaitLeader(ctx)
	if err := m.Raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(WALDir(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the raft-wal directory is still in place after the restart: %v", err)
	}
	got, _ := m.FSM.Encode()
	if !bytes.Equal(got, want) {
		t.Fatal("state after restart differs")
	}
	if res, _, _ := m.Apply(ctx, fsm.MsgAdmit, admitCmd(3)); !res.Duplicate {
		t.Error("an idempotency key admitted before the restart was admitted again")
	}
}

// TestSilentPeersDoNotBlock: connections that never speak do not hold up a
// real server's handshake.
func TestSilentPeersDoNotBlock(t *testing.T) {
	ca := newTestCA(t)
	n := startNode(t, ca, "s1", t.TempDir(), true)
	defer n.Shutdown()
	for i := 0; i < 4; i++ {
		c, err := net.Dial("tcp", string(n.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// A server that did the silent peers' handshakes before this one would
	// answer after their handshakeTimeout at the earliest: the dial gives up
	// a second before it, which leaves a loaded machine (CI runs every
	// package at once under -race) 9 s for one handshake.
	cfg := ca.tls(t, pki.RoleServer, "s2")
	st := &tlsStream{config: cfg}
	start := time.Now()
	c, err := st.Dial(n.Addr(), handshakeTimeout-time.Second)
	if err != nil {
		t.Fatalf("dial behind silent peers: %v after %s", err, time.Since(start))
	}
	c.Close()
}
