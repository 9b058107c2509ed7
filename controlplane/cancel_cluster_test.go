package controlplane_test

import (
	"context"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestCancelThroughFollower: a cancel signed with the tenant's key and sent
// to a follower, with ?wait=, is forwarded to the leader with its target as
// signed, and answered canceled; so is a run's cancel.
func TestCancelThroughFollower(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	ctx, fc := startForwardCluster(t)
	leader, follower, creds := fc.leader, fc.follower, fc.Creds
	if err := localcluster.AddBenchNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	c := fc.client(t, follower, "")
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	c.SignReads(creds.Tenant, creds.Orchestrator.KeyID, secret)
	d := &devServer{creds: creds}
	submit := func(run string) string {
		r, err := c.Submit(ctx, d.intent(t, "echo_approval", `{}`, func(in *protocol.Intent) { in.RunID = run }), nil, 0)
		if err != nil || r.State != "pending_approval" {
			t.Fatalf("submit: %+v %v", r, err)
		}
		return r.IntentID
	}
	one, two := submit("run-a"), submit("run-b")
	r, err := c.CancelIntentWait(ctx, one, 10*time.Second)
	if err != nil || r.State != "canceled" || r.ReceiptIndex == nil {
		t.Fatalf("cancel through a follower: %+v %v", r, err)
	}
	rc, err := c.CancelRunWait(ctx, creds.Tenant, "run-b", 10*time.Second)
	if err != nil || len(rc.Intents) != 1 || rc.Intents[0].IntentID != two || rc.Intents[0].State != "canceled" {
		t.Fatalf("run cancel through a follower: %+v %v", rc, err)
	}
}

// forwardCluster is three servers on loopback, for the tests of what a
// follower forwards to the leader.
type forwardCluster struct {
	*localcluster.Cluster
	dir              string
	leader, follower *controlplane.Server
}

// startForwardCluster starts three servers, closed when the test ends, with
// Raft's 5 s timeouts, not its 1 s: the tests are about forwarding, not
// elections, and the longer timeouts keep a starved leader in place on a
// loaded machine. Its context ends after two minutes.
func startForwardCluster(t *testing.T) (context.Context, *forwardCluster) {
	t.Helper()
	fc := &forwardCluster{dir: t.TempDir()}
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	lc, err := localcluster.Start(ctx, fc.dir, 3, base)
	if err != nil {
		t.Fatal(err)
	}
	fc.Cluster = lc
	t.Cleanup(func() {
		for _, s := range lc.Servers {
			s.Close(context.Background())
		}
	})
	for _, s := range lc.Servers {
		if localcluster.IsLeader(s) {
			fc.leader = s
		} else if fc.follower == nil {
			fc.follower = s
		}
	}
	return ctx, fc
}

// client is a client of server s, with token, that trusts the cluster's CA.
func (fc *forwardCluster) client(t *testing.T, s *controlplane.Server, token string) *client.Client {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(fc.dir, "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New("https://"+s.Addr().String(), token)
	if err := c.TrustCA(caPEM); err != nil {
		t.Fatal(err)
	}
	return c
}
