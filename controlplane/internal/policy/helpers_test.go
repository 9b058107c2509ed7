package policy

import (
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// intent is a structurally valid intent of tenant "acme" by principal "bot"
// on tool "echo"; opts adjust it.
func intent(params string, opts ...func(*protocol.Intent)) *protocol.Intent {
	in := &protocol.Intent{
		Type: "writ.intent/v1", ID: "in-1", Tenant: "acme", Principal: "bot",
		RunID: "run-1", Tool: "echo", Params: jsontext.Value(params),
	}
	for _, o := range opts {
		o(in)
	}
	return in
}

func tenant(t string) func(*protocol.Intent) { return func(in *protocol.Intent) { in.Tenant = t } }
func principal(p string) func(*protocol.Intent) {
	return func(in *protocol.Intent) { in.Principal = p }
}
func onTool(name string) func(*protocol.Intent) { return func(in *protocol.Intent) { in.Tool = name } }
func withContext(c string) func(*protocol.Intent) {
	return func(in *protocol.Intent) { in.Context = jsontext.Value(c) }
}

func echoTool() Tool { return Tool{Name: "echo", Sandbox: "wasm"} }

func approval(in *protocol.Intent, approver, decision string) *protocol.Approval {
	return &protocol.Approval{
		Type: "writ.approval/v1", ID: "ap-1", IntentID: in.ID, Tenant: in.Tenant,
		Approver: approver, Decision: decision,
	}
}

func mustParse(t testing.TB, src string) *Set {
	t.Helper()
	s, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func invoke(t testing.TB, s *Set, in *protocol.Intent, tool Tool) Decision {
	t.Helper()
	req, err := NewInvokeRequest(in, tool)
	if err != nil {
		t.Fatalf("NewInvokeRequest: %v", err)
	}
	return s.Invoke(req)
}

// want is the part of a Decision a table row states.
type want struct {
	allow, approval bool
	policies        []string
	errors          bool
}

func check(t *testing.T, got Decision, w want) {
	t.Helper()
	if got.Allow != w.allow || got.ApprovalRequired != w.approval {
		t.Errorf("got allow=%v approval=%v, want allow=%v approval=%v (errors %q)",
			got.Allow, got.ApprovalRequired, w.allow, w.approval, got.Errors)
	}
	wp := w.policies
	if wp == nil {
		wp = []string{}
	}
	if got.Policies == nil || !slices.Equal(got.Policies, wp) {
		t.Errorf("got policies %#v, want %#v", got.Policies, wp)
	}
	if (len(got.Errors) > 0) != w.errors {
		t.Errorf("got errors %q, want errors: %v", got.Errors, w.errors)
	}
}

func approve(t testing.TB, s *Set, in *protocol.Intent, approver string) Decision {
	t.Helper()
	req, err := NewApproveRequest(in, approval(in, approver, "approve"), Tool{Name: in.Tool})
	if err != nil {
		t.Fatalf("NewApproveRequest: %v", err)
	}
	return s.Approve(req)
}
