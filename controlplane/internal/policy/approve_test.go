package policy

import (
	"errors"
	"testing"

	"github.com/writhq/writ/protocol"
)

// approvers: alice may approve anything but her own intents; any approver of
// tenant acme may deny; nobody approves a payment above 10000.
const approvers = `
@id("alice.approves")
permit (principal == Writ::Approver::"alice", action == Writ::Action::"approve", resource)
when { context.principal != principal.name };

@id("tenant.denies")
permit (principal, action == Writ::Action::"approve", resource)
when { principal.tenant == "acme" && context.decision == "deny" };

@id("no.self.approval")
forbid (principal, action == Writ::Action::"approve", resource)
when { context.principal == principal.name };

@id("no.big.payments")
forbid (principal, action == Writ::Action::"approve", resource == Writ::Tool::"pay")
when { context.decision == "approve" && context.params.amount > 10000 };
`

func TestApprove(t *testing.T) {
	t.Parallel()
	pay := Tool{Name: "pay", Capabilities: []string{"money"}}
	for _, tc := range []struct {
		name     string
		in       *protocol.Intent
		tool     Tool
		approver string
		decision string
		want     want
	}{
		{"alice approves", intent(`{}`), echoTool(), "alice", "approve",
			want{allow: true, policies: []string{"alice.approves"}}},
		{"carol may not approve", intent(`{}`), echoTool(), "carol", "approve", want{}},
		{"an approver of another tenant may not deny", intent(`{}`, tenant("globex")), echoTool(), "dave", "deny", want{}},
		{"carol may deny", intent(`{}`), echoTool(), "carol", "deny",
			want{allow: true, policies: []string{"tenant.denies"}}},
		{"alice may not approve her own intent", intent(`{}`, principal("alice")), echoTool(), "alice", "approve",
			want{policies: []string{"no.self.approval"}}},
		{"alice may not deny her own intent", intent(`{}`, principal("alice")), echoTool(), "alice", "deny",
			want{policies: []string{"no.self.approval"}}},
		{"big payment approval forbidden", intent(`{"amount": 20000}`, onTool("pay")), pay, "alice", "approve",
			want{policies: []string{"no.big.payments"}}},
		{"big payment may be denied", intent(`{"amount": 20000}`, onTool("pay")), pay, "carol", "deny",
			want{allow: true, policies: []string{"tenant.denies"}}},
		{"small payment approved", intent(`{"amount": 200}`, onTool("pay")), pay, "alice", "approve",
			want{allow: true, policies: []string{"alice.approves"}}},
		{"payment without amount fails closed", intent(`{}`, onTool("pay")), pay, "alice", "approve",
			want{policies: []string{"no.big.payments"}, errors: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, approvers)
			req, err := NewApproveRequest(tc.in, approval(tc.in, tc.approver, tc.decision), tc.tool)
			if err != nil {
				t.Fatalf("NewApproveRequest: %v", err)
			}
			check(t, s.Approve(req), tc.want)
		})
	}
}

func TestApproveNeverRequiresApproval(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `@id("p") @approval("required") permit (principal, action, resource);`)
	in := intent(`{}`)
	req, err := NewApproveRequest(in, approval(in, "alice", "approve"), echoTool())
	if err != nil {
		t.Fatal(err)
	}
	check(t, s.Approve(req), want{allow: true, policies: []string{"p"}})
	check(t, s.Invoke(mustInvoke(t, in)), want{allow: true, approval: true, policies: []string{"p"}})
}

// TestSelfApprovalTrap shows why person entities carry a name attribute:
// comparing the context's String with the principal entity itself is always
// "not equal" in Cedar, so that policy would let alice approve her own intent.
func TestSelfApprovalTrap(t *testing.T) {
	t.Parallel()
	in := intent(`{}`, principal("alice"))
	req, err := NewApproveRequest(in, approval(in, "alice", "approve"), echoTool())
	if err != nil {
		t.Fatal(err)
	}
	wrong := mustParse(t, `@id("p") permit (principal, action, resource) when { context.principal != principal };`)
	check(t, wrong.Approve(req), want{allow: true, policies: []string{"p"}})
	right := mustParse(t, `@id("p") permit (principal, action, resource) when { context.principal != principal.name };`)
	check(t, right.Approve(req), want{})
}

func TestApproveSeesIntentContext(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `@id("p") permit (principal, action, resource) when {
		principal == Writ::Approver::"alice" && principal.tenant == "acme" &&
		resource == Writ::Tool::"echo" && context.channel == "web" && context.params.n == 1 &&
		context.run_id == "run-1" && context.principal == "bot" && context.decision == "approve" };`)
	in := intent(`{"n": 1}`, withContext(`{"channel": "web"}`))
	req, err := NewApproveRequest(in, approval(in, "alice", "approve"), echoTool())
	if err != nil {
		t.Fatal(err)
	}
	check(t, s.Approve(req), want{allow: true, policies: []string{"p"}})
	if d := s.Invoke(mustInvoke(t, in)); d.Allow {
		t.Errorf("got invoke allowed by an approve-only policy, want denied")
	}
}

func mustInvoke(t *testing.T, in *protocol.Intent) InvokeRequest {
	t.Helper()
	req, err := NewInvokeRequest(in, echoTool())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestNewApproveRequestErrors(t *testing.T) {
	t.Parallel()
	in := intent(`{}`)
	otherIntent := approval(in, "alice", "approve")
	otherIntent.IntentID = "in-2"
	otherTenant := approval(in, "alice", "approve")
	otherTenant.Tenant = "globex"
	for _, tc := range []struct {
		name string
		in   *protocol.Intent
		ap   *protocol.Approval
		tool Tool
		want error
	}{
		{"nil intent", nil, approval(in, "alice", "approve"), echoTool(), ErrMismatch},
		{"nil approval", in, nil, echoTool(), ErrMismatch},
		{"other intent", in, otherIntent, echoTool(), ErrMismatch},
		{"other tenant", in, otherTenant, echoTool(), ErrMismatch},
		{"other tool", in, approval(in, "alice", "approve"), Tool{Name: "rm"}, ErrMismatch},
		{"bad params", intent(`[]`), approval(in, "alice", "approve"), echoTool(), ErrNotObject},
		{"fine", in, approval(in, "alice", "approve"), echoTool(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewApproveRequest(tc.in, tc.ap, tc.tool); !errors.Is(err, tc.want) {
				t.Errorf("got error %v, want %v", err, tc.want)
			}
		})
	}
}
