package controlplane_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// A tool registered with approvals_required 2 waits for two distinct
// approvers: the first approval leaves it pending, the same approver again
// is refused approval_duplicate, a second approver's lets it run; the answer
// names both (the FSM's TestSeveralApprovers checks the receipt).
func TestTwoApprovers(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	spec := `{"name":"echo","approvals_required":2,"input_schema":{"type":"object"},"manifest":{"name":"echo","tier":"wasm","module":"/x.wasm"}}`
	if err := d.admin.Admin(ctx, "PUT", "tools", []byte(spec)); err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(nil)
	body := fmt.Sprintf(`{"public":%q,"approver":"second@dev"}`, base64.StdEncoding.EncodeToString(pub))
	if err := d.admin.Admin(ctx, "PUT", "tenants/"+d.creds.Tenant+"/approvers/second-key", []byte(body)); err != nil {
		t.Fatal(err)
	}
	raw := d.intent(t, "echo", `{"msg":"x"}`)
	r, err := d.c.Submit(ctx, raw, nil, 0)
	if err != nil || r.State != "pending_approval" || r.ApprovalsRequired != 2 {
		t.Fatalf("submit: %+v %v", r, err)
	}
	if r, err = d.c.Approve(ctx, d.approval(t, raw, "approve")); err != nil || r.State != "pending_approval" || len(r.Approvals) != 1 {
		t.Fatalf("first approval: %+v %v", r, err)
	}
	if _, err := d.c.Approve(ctx, d.approval(t, raw, "approve")); apiCode(err) != protocol.CodeApprovalDuplicate {
		t.Fatalf("the same approver again: %v", err)
	}
	in, _ := protocol.DecodeIntent(raw, 0)
	now := time.Now().UTC()
	a := &protocol.Approval{Type: "writ.approval/v1", ID: "apr-second", IntentID: in.ID, PayloadHash: in.PayloadHash, Tenant: in.Tenant,
		Approver: "second@dev", Decision: "approve", Nonce: base64.StdEncoding.EncodeToString([]byte("second-approver-nonce")),
		IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(time.Minute)), KeyID: "second-key"}
	if err := a.Sign(priv); err != nil {
		t.Fatal(err)
	}
	second, _ := jsonx.Marshal(a)
	r, err = d.c.Approve(ctx, second)
	// Approved: it goes on to scheduling (queued: the registration above
	// names a manifest no node has).
	if err != nil || r.State != "queued" || len(r.Approvals) != 2 || r.Approvals[1].Approver != "second@dev" {
		t.Fatalf("second approval: %+v %v", r, err)
	}
}
