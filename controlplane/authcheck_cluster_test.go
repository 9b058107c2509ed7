package controlplane_test

import (
	"encoding/base64"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
)

// TestAuthChangeUnderForwardedSubmission: a submission sent to a follower,
// forwarded to the leader, whose policy set is replaced between the
// leader's decision and its proposal, ends decided by the new policy set;
// and every replica holds the same outcome and the same auth_index, so that
// none applied the entry the leader's FSM refused.
func TestAuthChangeUnderForwardedSubmission(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	ctx, fc := startForwardCluster(t)
	servers, leader, creds := fc.Servers, fc.leader, fc.Creds
	c := fc.client(t, fc.follower, "")
	admin := fc.client(t, leader, creds.AdminToken)
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	c.SignReads(creds.Tenant, creds.Orchestrator.KeyID, secret)
	d := &devServer{creds: creds}

	var proposals atomic.Int32
	controlplane.BeforePropose(leader, func(cmd string) {
		if proposals.Add(1) == 1 {
			if err := admin.Admin(ctx, "PUT", "policy", []byte(denyAll)); err != nil {
				t.Error(err)
			}
		}
	})
	r, err := c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
	controlplane.BeforePropose(leader, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "denied" || r.Error == nil || r.Error.Code != protocol.CodePolicyDenied || proposals.Load() != 2 {
		t.Fatalf("a forwarded intent whose policy set was replaced before its entry: %s %+v after %d proposals, want denied after 2",
			r.State, r.Error, proposals.Load())
	}
	want := localcluster.AppliedIndex(leader)
	for _, s := range servers {
		for localcluster.AppliedIndex(s) < want {
			if ctx.Err() != nil {
				t.Fatalf("server %s did not apply index %d", localcluster.ID(s), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := controlplane.IntentState(s, r.IntentID); got != "denied" {
			t.Errorf("server %s holds the intent %q, want denied", localcluster.ID(s), got)
		}
		if got, lead := controlplane.AuthIndex(s), controlplane.AuthIndex(leader); got != lead || got == 0 {
			t.Errorf("server %s has auth_index %d, the leader %d", localcluster.ID(s), got, lead)
		}
	}
}
