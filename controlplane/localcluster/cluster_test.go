package localcluster_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestCluster: Start gives 3 servers that elect a leader and hold what writ
// dev registers; the bench node is a ready node with every tool; a raw
// no-op is applied on the leader (grouped ones counted by group commit) and
// refused by a follower; the raw QUIC baseline measures what it is asked.
func TestCluster(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ids []string
	for _, s := range c.Servers {
		ids = append(ids, localcluster.ID(s))
	}
	if !slices.Equal(ids, []string{"s1", "s2", "s3"}) {
		t.Errorf("server ids %v, want s1 s2 s3", ids)
	}
	leader, err := localcluster.WaitLeader(ctx, c.Servers)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := c.CAPEM()
	if err != nil {
		t.Fatal(err)
	}
	admin := client.New("https://"+leader.Addr().String(), c.Creds.AdminToken)
	if err := admin.TrustCA(caPEM); err != nil {
		t.Fatal(err)
	}
	tools, err := admin.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"echo", "echo_approval"}) {
		t.Fatalf("registered tools %v, want echo and echo_approval", names)
	}

	if err := localcluster.AddBenchNode(ctx, leader); err != nil {
		t.Fatal(err)
	}
	nodes, err := admin.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].ID != "bench-node" || nodes[0].Status != "ready" || len(nodes[0].Tools) != len(tools) {
		t.Fatalf("after AddBenchNode the nodes are %+v, want bench-node ready with %d tools", nodes, len(tools))
	}

	i0 := localcluster.AppliedIndex(leader)
	e0, c0 := localcluster.GroupStats(leader)
	if err := localcluster.ApplyNoop(ctx, leader, 1000, false); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.ApplyNoop(ctx, leader, 1000, true); err != nil {
		t.Fatal(err)
	}
	if i := localcluster.AppliedIndex(leader); i < i0+2 {
		t.Errorf("applied index %d after two no-ops from %d", i, i0)
	}
	if e1, c1 := localcluster.GroupStats(leader); e1 != e0+1 || c1 != c0+1 {
		t.Errorf("group commit counted %d entries and %d commands for one grouped no-op, want 1 and 1", e1-e0, c1-c0)
	}
	for _, s := range c.Servers {
		if s == leader {
			continue
		}
		if localcluster.IsLeader(s) {
			t.Fatalf("%s and %s both lead", localcluster.ID(s), localcluster.ID(leader))
		}
		if err := localcluster.ApplyNoop(ctx, s, 10, false); !errors.Is(err, localcluster.ErrNotLeader) {
			t.Errorf("a no-op on follower %s: %v, want ErrNotLeader", localcluster.ID(s), err)
		}
	}

	rtt, err := localcluster.QUICRoundTrips(ctx, 5, 200)
	if err != nil || len(rtt) != 5 || slices.Min(rtt) <= 0 {
		t.Fatalf("QUICRoundTrips(5): %v %v", rtt, err)
	}
}

// TestAdmitEntrySize: the entry an admission proposes is larger than the
// intent it carries, and a body that is no intent is refused.
func TestAdmitEntrySize(t *testing.T) {
	now := time.Now().UTC()
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: "i1", Tenant: "dev", Principal: "p", RunID: "r", Tool: "echo",
		Params: jsontext.Value(`{"msg":"hi"}`), IdempotencyKey: "k1", IssuedAt: protocol.FormatTime(now),
		ExpiresAt: protocol.FormatTime(now.Add(5 * time.Minute)), KeyID: "k",
	}
	if err := in.SetPayloadHash(); err != nil {
		t.Fatal(err)
	}
	if err := in.Sign(make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
	intent, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	n, err := localcluster.AdmitEntrySize(intent)
	if err != nil {
		t.Fatal(err)
	}
	if n <= len(intent) {
		t.Errorf("entry of %d bytes for an intent of %d", n, len(intent))
	}
	if _, err := localcluster.AdmitEntrySize([]byte(`{"not":"an intent"`)); err == nil {
		t.Error("a body that is no intent was sized")
	}
}
