package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestYieldLeadership: a leader told that its FSM waits for disk space
// hands the leadership to another server of a real 3-server cluster; a
// follower told so changes nothing.
func TestYieldLeadership(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	servers := lc.Servers
	leader := func() *controlplane.Server {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, s := range servers {
				if localcluster.IsLeader(s) {
					return s
				}
			}
		}
		t.Fatal("no leader")
		return nil
	}
	old := leader()
	for _, s := range servers {
		if s != old {
			controlplane.YieldLeadership(s) // a follower: nothing to hand on
		}
	}
	if leader() != old {
		t.Fatal("a follower's yield moved the leadership")
	}
	controlplane.YieldLeadership(old)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := leader(); l != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader still leads 20 s after it yielded")
		}
	}
}

// TestAgentsLeaveFullServer: a server of a real 3-server cluster whose disk
// fills ends the session of the node (internal/simagent) connected to it
// with a bye, and refuses its new session while the disk stays full; the
// node connects to another server, where its intent completes; with space
// again, the server takes the node's session.
func TestAgentsLeaveFullServer(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	// The test is about sessions, not elections: Raft's 5 s timeouts keep
	// the leader in place on a loaded machine.
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	base.AgentAddr = "127.0.0.1:0" // each server takes node sessions (localcluster picks the port)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	leader, err := localcluster.WaitLeader(ctx, lc.Servers)
	if err != nil {
		t.Fatal(err)
	}
	var full, other *controlplane.Server // two followers
	for _, s := range lc.Servers {
		switch {
		case s == leader:
		case full == nil:
			full = s
		default:
			other = s
		}
	}
	caPEM, err := lc.CAPEM()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}}}
	api := "https://" + leader.Addr().String()
	tools := toolHashesVia(t, api, hc)
	n := enrollSimVia(t, leader, api, hc)
	defer n.close()
	heldBy := func(s *controlplane.Server) func() bool {
		return func() bool {
			v, ok := s.Node(n.ID)
			return ok && v.Status == "ready" && v.Server == localcluster.ID(s)
		}
	}
	// Both followers must have applied the enrollment, or they close the
	// session "unknown, try again" (an agent would retry).
	eventually.True(t, "the followers apply the enrollment", func() bool {
		_, _, fok := controlplane.LocalNodeView(full, n.ID)
		_, _, ook := controlplane.LocalNodeView(other, n.ID)
		return fok && ook
	})
	if err := n.connect(t, full.AgentAddr(), tools); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the node's session with "+localcluster.ID(full)+" to be recorded", heldBy(full))

	controlplane.SetDiskFull(full, true)
	select {
	case <-n.Done():
	case <-ctx.Done():
		t.Fatal("the server whose disk is full kept the node's session")
	}
	eventually.True(t, "the full server to forget the session", func() bool { return full.NodeSessions() == 0 })
	n.close()
	err = n.connect(t, full.AgentAddr(), tools)
	if err == nil || !strings.Contains(err.Error(), protocol.FrameBye) {
		t.Fatalf("a new session with the server whose disk is full: %v, want its bye", err)
	}
	n.close()
	if err := n.connect(t, other.AgentAddr(), tools); err != nil {
		t.Fatalf("the node could not move to %s: %v", localcluster.ID(other), err)
	}
	eventually.True(t, "the node's session with "+localcluster.ID(other)+" to be recorded", heldBy(other))

	c := client.New("https://"+other.Addr().String(), "")
	if err := c.TrustCA(caPEM); err != nil {
		t.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(lc.Creds.Orchestrator.Secret)
	c.SignReads(lc.Creds.Tenant, lc.Creds.Orchestrator.KeyID, secret)
	d := &devServer{creds: lc.Creds}
	r, err := c.Submit(ctx, d.intent(t, "echo", `{"msg":"hi"}`), nil, 30*time.Second)
	if err != nil || r.State != "completed" {
		t.Fatalf("an intent for the node that moved: %+v %v, want completed", r, err)
	}

	controlplane.SetDiskFull(full, false)
	n.close()
	if err := n.connect(t, full.AgentAddr(), tools); err != nil {
		t.Fatalf("a session with the server that has space again: %v", err)
	}
	eventually.True(t, "the node's session with "+localcluster.ID(full)+" to be recorded again", heldBy(full))
}

// TestAloneKeepsAgentsWhileFull: a server alone whose disk is full keeps its
// node sessions and takes new ones (it has nowhere to send them): an intent
// submitted meanwhile completes through the node it held.
func TestAloneKeepsAgentsWhileFull(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	controlplane.SetDiskFull(d.s, true)
	defer controlplane.SetDiskFull(d.s, false)
	second := enrollSim(t, d.s, "http://"+d.s.Addr().String())
	defer second.close()
	if err := second.connect(t, d.s.AgentAddr(), toolHashes(t, "http://"+d.s.Addr().String())); err != nil {
		t.Fatalf("a server alone with its disk full refused a session: %v", err)
	}
	waitReady(t, d.s, second.ID)
	second.Close() // the intent goes to the node connected before the disk filled
	eventually.True(t, "the second node's session to end", func() bool {
		v, ok := d.s.Node(second.ID)
		return ok && v.Status != "ready"
	})
	r, err := d.c.Submit(context.Background(), d.intent(t, "echo", `{"msg":"hi"}`), nil, 30*time.Second)
	if err != nil || r.State != "completed" {
		t.Fatalf("an intent on a server alone with its disk full: %+v %v, want completed", r, err)
	}
	if got := d.node.Runs.Load(); got != 1 {
		t.Fatalf("the node connected before the disk filled ran %d dispatches, want 1", got)
	}
}
