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
	dir := t.TempDir()
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	// The test is about forwarding, not elections: Raft's 5 s timeouts, not
	// its 1 s, keep a starved leader in place on a loaded machine.
	controlplane.SetRaftTimeouts(&base, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, dir, 3, base)
	if err != nil {
		t.Fatal(err)
	}
	servers, creds := lc.Servers, lc.Creds
	defer func() {
		for _, s := range servers {
			s.Close(context.Background())
		}
	}()
	var leader, follower *controlplane.Server
	for _, s := range servers {
		if localcluster.IsLeader(s) {
			leader = s
		} else if follower == nil {
			follower = s
		}
	}
	if err := localcluster.AddBenchNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New("https://"+follower.Addr().String(), "")
	if err := c.TrustCA(caPEM); err != nil {
		t.Fatal(err)
	}
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
