package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestReconnectToALaggingServer: a node's session state is decided by the
// committed log, not by the view of the server it reconnects to. Three
// servers; a node's session is on a follower, x, which snapshots its state
// (the node ready, its session on x); the node then disconnects, which x
// records (down). The whole cluster stops, and x starts alone: restored from
// its snapshot, with no leader to tell it the commit index, it still shows
// the node ready on x. The node reconnects to x, the other two start, and x
// applies its log. The node must end ready with its session on x in every
// server's view, and an intent targeted at it must run there.
func TestReconnectToALaggingServer(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	dir := t.TempDir()
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	base.AgentAddr = "on"                  // each server takes sessions on its API port (UDP)
	base.AgentHeartbeat = 25 * time.Second // the sim node sends no heartbeats
	// Raft's 5 s timeouts, not its 1 s: a starved leader keeps its place on
	// a loaded machine, and after the restart no leader exists for 5 s at
	// least, time for the node's hello to reach x first.
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, dir, 3, base)
	if err != nil {
		t.Fatal(err)
	}
	servers, creds := lc.Servers, lc.Creds
	running := map[int]*controlplane.Server{0: servers[0], 1: servers[1], 2: servers[2]}
	defer func() {
		for _, s := range running {
			s.Close(context.Background())
		}
	}()
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := func(s *controlplane.Server) string { return "https://" + s.Addr().String() }
	leader, x := -1, -1
	for i, s := range servers {
		if localcluster.IsLeader(s) {
			leader = i
		} else if x < 0 {
			x = i
		}
	}
	if leader < 0 || x < 0 {
		t.Fatal("no leader and follower")
	}
	node := enrollSimVia(t, servers[leader], url(servers[leader]), hc)
	tools := toolHashesVia(t, url(servers[leader]), hc)
	// x must have applied the enrollment, or it closes the session "unknown,
	// try again" (an agent would retry).
	eventually.True(t, "x applies the enrollment", func() bool {
		_, _, ok := controlplane.LocalNodeView(servers[x], node.ID)
		return ok
	})
	if err := node.connect(t, servers[x].AgentAddr(), tools); err != nil {
		t.Fatal(err)
	}
	waitView(t, servers, node.ID, fsm.NodeReady, localcluster.ID(servers[x]))
	if err := controlplane.SnapshotNow(servers[x]); err != nil {
		t.Fatal(err)
	}
	node.close()
	waitView(t, servers, node.ID, fsm.NodeDown, "")

	cfgs := make([]controlplane.Config, 3)
	for i, s := range servers {
		cfgs[i] = controlplane.ConfigOf(s)
		controlplane.CloseAsCrash(s) // x keeps its stale snapshot
		delete(running, i)
	}
	start := func(i int) *controlplane.Server {
		// Its ports again: a socket just closed may take a moment to free.
		s, err := controlplane.New(cfgs[i])
		for deadline := time.Now().Add(15 * time.Second); err != nil && strings.Contains(err.Error(), "address already in use") && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			s, err = controlplane.New(cfgs[i])
		}
		if err != nil {
			t.Fatal(err)
		}
		running[i] = s
		go s.Serve()
		return s
	}
	lag := start(x)
	if status, server, _ := controlplane.LocalNodeView(lag, node.ID); status != fsm.NodeReady || server != localcluster.ID(lag) {
		t.Fatalf("x restarted alone shows the node %s on %q: the test needs its stale view (ready on x)", status, server)
	}
	connected := make(chan error, 1)
	go func() {
		var err error
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = node.connect(t, lag.AgentAddr(), tools); err == nil {
				break
			}
		}
		connected <- err
	}()
	time.Sleep(500 * time.Millisecond) // the hello reaches x before any leader exists
	for i := range cfgs {
		if i != x {
			start(i)
		}
	}
	if err := <-connected; err != nil {
		t.Fatalf("reconnecting to x: %v", err)
	}
	t.Cleanup(node.close)
	all := []*controlplane.Server{running[0], running[1], running[2]}
	waitCaughtUp(t, all)
	waitView(t, all, node.ID, fsm.NodeReady, localcluster.ID(lag))

	c := client.New(url(lag), "")
	if err := c.TrustCA(caPEM); err != nil {
		t.Fatal(err)
	}
	d := &devServer{creds: creds}
	raw := d.intent(t, "echo", `{"msg":"after the restart"}`, func(in *protocol.Intent) { in.Target = &protocol.Target{Node: node.ID} })
	r, err := c.Submit(ctx, raw, nil, 30*time.Second)
	if err != nil || r.State != "completed" || r.Dispatch == nil || r.Dispatch.Node != node.ID {
		t.Fatalf("an intent targeted at the reconnected node: %+v %v", r, err)
	}
	// Still ready once every server has applied everything since.
	waitCaughtUp(t, all)
	for _, s := range all {
		if status, server, _ := controlplane.LocalNodeView(s, node.ID); status != fsm.NodeReady || server != localcluster.ID(lag) {
			t.Fatalf("server %s shows the connected node %s on %q", localcluster.ID(s), status, server)
		}
	}
}

// waitView waits until every server's view of the node is status on server.
func waitView(t *testing.T, servers []*controlplane.Server, id, status, server string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		var got string
		for _, s := range servers {
			st, sv, _ := controlplane.LocalNodeView(s, id)
			if st != status || sv != server {
				ok, got = false, localcluster.ID(s)+": "+st+" on "+sv
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: want %s on %q, %s", id, status, server, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitCaughtUp waits until there is a leader and every server has applied
// the leader's index as it was when the wait began.
func waitCaughtUp(t *testing.T, servers []*controlplane.Server) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var target uint64
	for target == 0 {
		for _, s := range servers {
			if localcluster.IsLeader(s) {
				target = localcluster.AppliedIndex(s)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range servers {
		for localcluster.AppliedIndex(s) < target {
			if time.Now().After(deadline) {
				t.Fatalf("server %s applied %d, the leader %d", localcluster.ID(s), localcluster.AppliedIndex(s), target)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
