package controlplane_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/protocol"
)

// TestPolicyChangedBeforeAdmission: the policy set changes after the leader
// decided an intent and before its entry: the FSM refuses the entry, the
// leader decides again, and the intent ends decided by the new policy set,
// not the one it was first decided under.
func TestPolicyChangedBeforeAdmission(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	proposals := adminBeforeProposal(t, d, "", "PUT", "policy", []byte(denyAll))
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
	controlplane.BeforePropose(d.s, nil)
	if err != nil {
		t.Fatal(err)
	}
	now, err := d.admin.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "denied" || r.Policy == nil || r.Policy.Decision != "deny" || r.Policy.Hash != now.Hash || r.Error == nil || r.Error.Code != protocol.CodePolicyDenied {
		t.Fatalf("an intent decided under the dev policy, which a deny-all replaced before its entry: %s %+v %+v, want denied by %s",
			r.State, r.Policy, r.Error, now.Hash)
	}
	if n := proposals.Load(); n != 2 {
		t.Errorf("%d proposals, want 2: the refused one and the one decided again", n)
	}
	if n := d.node.Runs.Load(); n != 0 {
		t.Errorf("the node ran %d tools", n)
	}
}

// TestIntentKeyRemovedBeforeAdmission: the orchestrator's key is removed
// after the leader verified an intent with it and before its entry: checked
// again, the intent is no longer authenticated (unknown_key) and nothing of
// it is recorded.
func TestIntentKeyRemovedBeforeAdmission(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo", `{"msg":"x"}`)
	in, _ := protocol.DecodeIntent(raw, 0)
	proposals := adminBeforeProposal(t, d, "", "DELETE", "tenants/"+d.creds.Tenant+"/keys/"+d.creds.Orchestrator.KeyID, nil)
	_, err := d.c.Submit(ctx, raw, nil, 0)
	controlplane.BeforePropose(d.s, nil)
	if apiCode(err) != protocol.CodeUnknownKey || proposals.Load() != 1 {
		t.Fatalf("an intent whose key was removed before its entry: %v after %d proposals, want unknown_key after 1", err, proposals.Load())
	}
	if _, err := d.admin.Intent(ctx, in.ID, 0); apiCode(err) != protocol.CodeNotFound {
		t.Fatalf("the intent was recorded: %v", err)
	}
}

// TestAuthorizationChangedEveryAttempt: when the policy set changes under
// every attempt, the leader gives up after a bounded number and answers 503
// authorization_changed with Retry-After, having recorded nothing; the same
// request sent again once the changes stop is admitted.
func TestAuthorizationChangedEveryAttempt(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	dev, err := d.admin.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var proposals atomic.Int32
	controlplane.BeforePropose(d.s, func(cmd string) {
		n := proposals.Add(1)
		if err := d.admin.Admin(ctx, "PUT", "policy", fmt.Appendf(nil, "%s\n// change %d\n", dev.Text, n)); err != nil {
			t.Error(err)
		}
	})
	raw := d.intent(t, "echo", `{"msg":"x"}`)
	in, _ := protocol.DecodeIntent(raw, 0)
	body := append(append([]byte(`{"intent":`), raw...), '}')
	resp, err := http.Post("http://"+d.s.Addr().String()+"/v1/intents", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	controlplane.BeforePropose(d.s, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !bytes.Contains(answer, []byte(`"authorization_changed"`)) {
		t.Fatalf("admission under changes at every attempt: %d (Retry-After %q) %s, want 503 authorization_changed with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), answer)
	}
	if n := proposals.Load(); n != 4 {
		t.Errorf("%d proposals, want 4", n)
	}
	if m := metricValue(metricsText(t, "http://"+d.s.Addr().String()), "writ_authorization_rechecks_total"); m != 4 {
		t.Errorf("writ_authorization_rechecks_total %v, want 4", m)
	}
	if _, err := d.admin.Intent(ctx, in.ID, 0); apiCode(err) != protocol.CodeNotFound {
		t.Fatalf("the refused intent was recorded: %v", err)
	}
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || r.IntentID != in.ID || r.Policy == nil || r.Policy.Decision != "allow" {
		t.Fatalf("the same intent again: %+v %v, want admitted", r, err)
	}
}

// TestApproverKeyRemovedBeforeApproval: the approver's key is removed after
// the leader verified an approval with it and before its entry: the
// approval is refused, the intent still waits and the nonce is not
// consumed — with the key registered again, the same approval is applied.
func TestApproverKeyRemovedBeforeApproval(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	raw := d.intent(t, "echo_approval", `{"msg":"x"}`)
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || r.State != "pending_approval" {
		t.Fatalf("submit: %+v %v", r, err)
	}
	approval := d.approval(t, raw, "approve")
	key := "tenants/" + d.creds.Tenant + "/approvers/" + d.creds.Approver.KeyID
	proposals := adminBeforeProposal(t, d, "approve_checked", "DELETE", key, nil)
	_, err = d.c.Approve(ctx, approval)
	controlplane.BeforePropose(d.s, nil)
	if code := apiCode(err); code == "" || code == protocol.CodeAuthorizationChanged || proposals.Load() != 1 {
		t.Fatalf("an approval whose key was removed before its entry: %v after %d proposals, want refused by its check", err, proposals.Load())
	}
	if got, err := d.admin.Intent(ctx, r.IntentID, 0); err != nil || got.State != "pending_approval" || got.Approval != nil {
		t.Fatalf("after the refused approval: %+v %v, want pending_approval", got, err)
	}
	body := fmt.Sprintf(`{"public":%q,"approver":%q}`, d.creds.Approver.Public, d.creds.Approver.Approver)
	if err := d.admin.Admin(ctx, "PUT", key, []byte(body)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.c.Approve(ctx, approval); err != nil || got.State == "pending_approval" || got.Approval == nil {
		t.Fatalf("the same approval with the key back: %+v %v, want applied (its nonce was not consumed)", got, err)
	}
}

// TestToolChangedBeforeAdmission: the tool is registered again, with a
// schema the params do not fit, after the leader decided an intent for it
// and before its entry: decided again, the intent ends rejected
// params_invalid under the new registration.
func TestToolChangedBeforeAdmission(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	spec := `{"name":"echo","input_schema":{"type":"object","required":["other"]},"manifest":{"name":"echo","tier":"wasm","module":"/x.wasm"}}`
	proposals := adminBeforeProposal(t, d, "", "PUT", "tools", []byte(spec))
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"x"}`), nil, 0)
	controlplane.BeforePropose(d.s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "rejected" || r.Error == nil || r.Error.Code != protocol.CodeParamsInvalid || proposals.Load() != 2 {
		t.Fatalf("an intent decided under the old registration, replaced before its entry: %s %+v after %d proposals, want rejected params_invalid after 2",
			r.State, r.Error, proposals.Load())
	}
}

// TestToolReregisteredSameManifest: a tool registered again with the same
// manifest (so the same manifest hash) but now requiring approval decides
// the next intent for it under the new registration: pending approval, not
// run. The leader's parsed copy of the old registration must not stand in
// for the new one.
func TestToolReregisteredSameManifest(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	// Decided once under the registration writ dev made, which needs no
	// approval.
	if r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"first"}`), nil, 10*time.Second); err != nil || r.State != "completed" {
		t.Fatalf("first intent: %+v %v, want completed", r, err)
	}
	spec := `{"name":"echo","input_schema":{"type":"object"},"requires_approval":true,` +
		`"manifest":{"name":"echo","tier":"wasm","module":"/nonexistent/echo.wasm"}}`
	if err := d.admin.Admin(ctx, "PUT", "tools", []byte(spec)); err != nil {
		t.Fatal(err)
	}
	if h := toolHashes(t, "http://"+d.s.Addr().String())["echo"]; h == "" {
		t.Fatal("echo is not listed")
	}
	runs := d.node.Runs.Load()
	r, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"second"}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != "pending_approval" {
		t.Fatalf("an intent for a tool registered again with requires_approval: %s, want pending_approval", r.State)
	}
	if n := d.node.Runs.Load(); n != runs {
		t.Errorf("the node ran the tool that now requires approval (%d runs, %d before)", n, runs)
	}
}

// TestAuthorizationChangedUnderSubmittedApproval: a submission whose intent
// is admitted but whose approval is overtaken by a policy change at every
// attempt is answered 503 authorization_changed saying that the intent is
// recorded and only the approval is not: the intent waits for approval,
// and the same submission sent again applies the approval.
func TestAuthorizationChangedUnderSubmittedApproval(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	dev, err := d.admin.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := d.intent(t, "echo_approval", `{"msg":"x"}`)
	in, _ := protocol.DecodeIntent(raw, 0)
	approval := d.approval(t, raw, "approve")
	var changes atomic.Int32
	controlplane.BeforePropose(d.s, func(cmd string) {
		if cmd != "approve_checked" {
			return
		}
		n := changes.Add(1)
		if err := d.admin.Admin(ctx, "PUT", "policy", fmt.Appendf(nil, "%s\n// change %d\n", dev.Text, n)); err != nil {
			t.Error(err)
		}
	})
	body := append(append(append(append([]byte(`{"intent":`), raw...), `,"approval":`...), approval...), '}')
	resp, err := http.Post("http://"+d.s.Addr().String()+"/v1/intents", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	controlplane.BeforePropose(d.s, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(answer, []byte(`"authorization_changed"`)) ||
		bytes.Contains(answer, []byte("nothing was recorded")) || !bytes.Contains(answer, []byte("is recorded")) {
		t.Fatalf("a submission whose approval was overtaken every time: %d %s, want 503 authorization_changed saying the intent is recorded",
			resp.StatusCode, answer)
	}
	if got, err := d.admin.Intent(ctx, in.ID, 0); err != nil || got.State != "pending_approval" || got.Approval != nil {
		t.Fatalf("the intent after its approval was refused: %+v %v, want pending_approval", got, err)
	}
	r, err := d.c.Submit(ctx, raw, approval, 0)
	if err != nil || r.IntentID != in.ID || r.State == "pending_approval" || r.Approval == nil {
		t.Fatalf("the same submission again: %+v %v, want the approval applied", r, err)
	}
}

// adminBeforeProposal makes the admin request method path body once, when
// the server first proposes a command of type only ("" for any) — between
// that command's check and its proposal — and counts those proposals. The
// caller removes the hook (BeforePropose nil) once its request is answered.
func adminBeforeProposal(t *testing.T, d *devServer, only, method, path string, body []byte) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	controlplane.BeforePropose(d.s, func(cmd string) {
		if (only == "" || cmd == only) && n.Add(1) == 1 {
			if err := d.admin.Admin(context.Background(), method, path, body); err != nil {
				t.Error(err)
			}
		}
	})
	return &n
}
