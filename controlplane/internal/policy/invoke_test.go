package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

const acmeInvoke = `
@id("acme.invoke")
permit (principal, action == Writ::Action::"invoke", resource)
when { principal.tenant == "acme" };
`

func TestInvoke(t *testing.T) {
	t.Parallel()
	network := Tool{Name: "fetch", Capabilities: []string{"network", "fs.read"}, Sandbox: "bwrap"}
	manifestApproval := Tool{Name: "deploy", RequiresApproval: true}
	for _, tc := range []struct {
		name   string
		policy string
		in     *protocol.Intent
		tool   Tool
		want   want
	}{
		{"empty set denies", ``, intent(`{}`), echoTool(), want{}},
		{"no matching permit denies", acmeInvoke, intent(`{}`, tenant("other")), echoTool(), want{}},
		{"permit allows", acmeInvoke, intent(`{}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},
		{"principal by id", `@id("p") permit (principal == Writ::Agent::"bot", action, resource);`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"principal by id, other principal", `@id("p") permit (principal == Writ::Agent::"bot", action, resource);`,
			intent(`{}`, principal("eve")), echoTool(), want{}},
		{"action is invoke", `@id("p") permit (principal, action == Writ::Action::"approve", resource);`,
			intent(`{}`), echoTool(), want{}},
		{"tool by id", `@id("p") permit (principal, action, resource == Writ::Tool::"echo");`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"forbid wins over permit", acmeInvoke + `
			@id("no.echo") forbid (principal, action, resource == Writ::Tool::"echo");`,
			intent(`{}`), echoTool(), want{policies: []string{"no.echo"}}},
		{"all satisfied permits are named, sorted", acmeInvoke + `
			@id("a.first") permit (principal, action, resource) when { context.tenant == "acme" };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"a.first", "acme.invoke"}}},
		{"all satisfied forbids are named, not permits", acmeInvoke + `
			@id("f2") forbid (principal, action, resource);
			@id("f1") forbid (principal, action, resource) when { context.run_id == "run-1" };`,
			intent(`{}`), echoTool(), want{policies: []string{"f1", "f2"}}},
		{"per-tenant permit, other tenant", acmeInvoke, intent(`{}`, tenant("globex")), echoTool(), want{}},
		{"tool tenant attribute is empty for a global tool", `@id("p") permit (principal, action, resource)
			when { resource.tenant == "" };`, intent(`{}`), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"tool of another tenant", `@id("p") permit (principal, action, resource)
			when { resource.tenant == "" || resource.tenant == principal.tenant };`,
			intent(`{}`), Tool{Name: "echo", Tenant: "globex"}, want{}},

		// capabilities, as a resource attribute and in the context
		{"capability forbid", acmeInvoke + `
			@id("no.network") forbid (principal, action, resource) when { resource.capabilities.contains("network") };`,
			intent(`{}`, onTool("fetch")), network, want{policies: []string{"no.network"}}},
		{"capability forbid, tool without it", acmeInvoke + `
			@id("no.network") forbid (principal, action, resource) when { resource.capabilities.contains("network") };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},
		{"capabilities in context", `@id("p") permit (principal, action, resource)
			when { context.capabilities.containsAll(["fs.read", "network"]) && resource.sandbox == "bwrap" };`,
			intent(`{}`, onTool("fetch")), network, want{allow: true, policies: []string{"p"}}},

		// approval
		{"approval required by annotation", acmeInvoke + `
			@id("echo.approval") @approval("required")
			permit (principal, action, resource == Writ::Tool::"echo");`,
			intent(`{}`), echoTool(), want{allow: true, approval: true, policies: []string{"acme.invoke", "echo.approval"}}},
		{"annotated permit not satisfied", acmeInvoke + `
			@id("deploy.approval") @approval("required")
			permit (principal, action, resource == Writ::Tool::"deploy");`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},
		{"annotated permit under a forbid denies without approval", `
			@id("p") @approval("required") permit (principal, action, resource);
			@id("f") forbid (principal, action, resource);`,
			intent(`{}`), echoTool(), want{policies: []string{"f"}}},
		{"requires_approval attribute", acmeInvoke + `
			@id("manifest.approval") @approval("required")
			permit (principal, action, resource) when { resource.requires_approval };`,
			intent(`{}`, onTool("deploy")), manifestApproval,
			want{allow: true, approval: true, policies: []string{"acme.invoke", "manifest.approval"}}},

		// params
		{"params amount below limit", `@id("small") permit (principal, action, resource)
			when { context.params.amount < 1000 };`,
			intent(`{"amount": 999}`), echoTool(), want{allow: true, policies: []string{"small"}}},
		{"params amount at limit", `@id("small") permit (principal, action, resource)
			when { context.params.amount < 1000 };`,
			intent(`{"amount": 1000}`), echoTool(), want{}},
		{"params amount 999.0 is a Long", `@id("small") permit (principal, action, resource)
			when { context.params.amount < 1000 };`,
			intent(`{"amount": 999.0}`), echoTool(), want{allow: true, policies: []string{"small"}}},
		{"params fractional amount is a decimal: < is a type error", `@id("small") permit (principal, action, resource)
			when { context.params.amount < 1000 };`,
			intent(`{"amount": 999.5}`), echoTool(), want{policies: []string{"small"}, errors: true}},
		{"params fractional amount with lessThan", `@id("small") permit (principal, action, resource)
			when { context.params.amount.lessThan(decimal("1000.0")) };`,
			intent(`{"amount": 999.5}`), echoTool(), want{allow: true, policies: []string{"small"}}},
		{"params recipient forbidden", acmeInvoke + `
			@id("no.x") forbid (principal, action, resource) when { context.params.to.contains("x@example.com") };`,
			intent(`{"to": ["a@example.com", "x@example.com"]}`), echoTool(), want{policies: []string{"no.x"}}},
		{"params recipient allowed", acmeInvoke + `
			@id("no.x") forbid (principal, action, resource) when { context.params.to.contains("x@example.com") };`,
			intent(`{"to": ["a@example.com"]}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},
		{"params nested record and like", `@id("p") permit (principal, action, resource)
			when { context.params.file.path like "/srv/*" && !context.params.file.overwrite };`,
			intent(`{"file": {"path": "/srv/x", "overwrite": false}}`), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"params null member is absent", `@id("p") permit (principal, action, resource)
			when { !(context.params has note) };`,
			intent(`{"note": null}`), echoTool(), want{allow: true, policies: []string{"p"}}},

		// fail closed
		{"forbid with a missing attribute fails closed", acmeInvoke + `
			@id("f") forbid (principal, action, resource) when { context.params.amount > 10 };`,
			intent(`{}`), echoTool(), want{policies: []string{"f"}, errors: true}},
		{"an erroring permit denies despite another permit", acmeInvoke + `
			@id("p") permit (principal, action, resource) when { context.params.amount > 10 };`,
			intent(`{}`), echoTool(), want{policies: []string{"p"}, errors: true}},
		{"approve-only context member read on invoke fails closed", acmeInvoke + `
			@id("f") forbid (principal, action, resource) when { context.decision == "deny" };`,
			intent(`{}`), echoTool(), want{policies: []string{"f"}, errors: true}},
		{"has guard avoids the error", acmeInvoke + `
			@id("f") forbid (principal, action, resource) when { context.params has amount && context.params.amount > 10 };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},
		{"unrepresentable number is a string: comparison fails closed", acmeInvoke + `
			@id("f") forbid (principal, action, resource) when { context.params has amount && context.params.amount > 10 };`,
			intent(`{"amount": 10.00001}`), echoTool(), want{policies: []string{"f"}, errors: true}},
		{"unscoped condition not reached for another tool", acmeInvoke + `
			@id("f") forbid (principal, action, resource == Writ::Tool::"pay") when { context.params.amount > 10 };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"acme.invoke"}}},

		// intent context and target
		{"channel and device", `@id("p") permit (principal, action, resource)
			when { context.channel == "slack" && context.device == "phone" && context.intent_context.user.id == 7 };`,
			intent(`{}`, withContext(`{"channel": "slack", "device": "phone", "user": {"id": 7}}`)), echoTool(),
			want{allow: true, policies: []string{"p"}}},
		{"channel that is not a string reads as empty", `@id("p") permit (principal, action, resource)
			when { context.channel == "" && context.device == "" };`,
			intent(`{}`, withContext(`{"channel": {"name": "slack"}}`)), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"no intent context", `@id("p") permit (principal, action, resource)
			when { context.channel == "" && context.intent_context == {} && context.node == "" && context.labels == {} };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"p"}}},
		{"target node", `@id("p") permit (principal, action, resource) when { context.node == "n1" };`,
			intent(`{}`, func(in *protocol.Intent) { in.Target = &protocol.Target{Node: "n1"} }), echoTool(),
			want{allow: true, policies: []string{"p"}}},
		{"target labels", `@id("p") permit (principal, action, resource) when { context.labels.site == "lab" };`,
			intent(`{}`, func(in *protocol.Intent) { in.Target = &protocol.Target{Labels: map[string]string{"site": "lab"}} }),
			echoTool(), want{allow: true, policies: []string{"p"}}},
		{"intent id, run id and tenant", `@id("p") permit (principal, action, resource)
			when { context.intent_id == "in-1" && context.run_id == "run-1" && context.tenant == principal.tenant };`,
			intent(`{}`), echoTool(), want{allow: true, policies: []string{"p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, invoke(t, mustParse(t, tc.policy), tc.in, tc.tool), tc.want)
		})
	}
}

func TestInvokeErrorNamesPolicyAndPosition(t *testing.T) {
	t.Parallel()
	s := mustParse(t, acmeInvoke+"\n@id(\"f\")\nforbid (principal, action, resource) when { context.params.amount > 10 };")
	d := invoke(t, s, intent(`{}`), echoTool())
	if len(d.Errors) != 1 || !strings.Contains(d.Errors[0], `policy "f" at line 6, column 1`) ||
		!strings.Contains(d.Errors[0], "amount") {
		t.Errorf("got errors %q, want one naming policy \"f\" at line 6, column 1 and the attribute", d.Errors)
	}
}

func TestInvokeZeroRequestDenies(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `@id("all") permit (principal, action, resource);`)
	check(t, s.Invoke(InvokeRequest{}), want{errors: true})
	check(t, s.Approve(ApproveRequest{}), want{errors: true})
}

func TestNewInvokeRequestErrors(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth)
	tooDeep := strings.Repeat(`{"a":`, MaxDepth+1) + `1` + strings.Repeat(`}`, MaxDepth+1)
	for _, tc := range []struct {
		name string
		in   *protocol.Intent
		tool Tool
		want error
	}{
		{"nil intent", nil, echoTool(), ErrMismatch},
		{"other tool", intent(`{}`), Tool{Name: "rm"}, ErrMismatch},
		{"params not an object", intent(`[1]`), echoTool(), ErrNotObject},
		{"params missing", intent(``), echoTool(), ErrJSON},
		{"params invalid", intent(`{"a":}`), echoTool(), ErrJSON},
		{"params duplicate member", intent(`{"a":1,"a":2}`), echoTool(), ErrJSON},
		{"params trailing data", intent(`{} {}`), echoTool(), ErrJSON},
		{"params too deep", intent(tooDeep), echoTool(), ErrTooDeep},
		{"context too deep", intent(`{}`, withContext(tooDeep)), echoTool(), ErrTooDeep},
		{"context not an object", intent(`{}`, withContext(`"x"`)), echoTool(), ErrNotObject},
		{"too many values across params and context",
			intent(`[`+strings.Repeat(`1,`, MaxValues/2)+`1]`, func(in *protocol.Intent) {
				in.Params = []byte(`{"a":[` + strings.Repeat(`1,`, MaxValues/2) + `1]}`)
				in.Context = []byte(`{"b":[` + strings.Repeat(`1,`, MaxValues/2) + `1]}`)
			}), echoTool(), ErrTooManyValues},
		{"at the depth limit", intent(deep), echoTool(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewInvokeRequest(tc.in, tc.tool)
			if !errors.Is(err, tc.want) {
				t.Errorf("got error %v, want %v", err, tc.want)
			}
			if tc.want != nil && errors.Is(tc.want, ErrInput) && !errors.Is(err, ErrInput) {
				t.Errorf("got error %v, want it to wrap ErrInput", err)
			}
		})
	}
}

// TestApprovers: a satisfied permit with @approvals("N") asks for N distinct
// approvers; the largest N among the determining permits wins, and one
// with @approval("required") alone asks for one.
func TestApprovers(t *testing.T) {
	t.Parallel()
	s := mustParse(t, `@id("two") @approvals("2") permit (principal, action == Writ::Action::"invoke", resource) when { resource.name == "pay" };
@id("three") @approvals("3") permit (principal, action == Writ::Action::"invoke", resource) when { resource.name == "pay" && principal.tenant == "acme" };
@id("one") @approval("required") permit (principal, action == Writ::Action::"invoke", resource) when { resource.name == "mail" };`)
	for _, c := range []struct {
		tool, tenant string
		required     bool
		approvers    int
	}{
		{"pay", "acme", true, 3},
		{"pay", "globex", true, 2},
		{"mail", "acme", true, 0},
	} {
		in := intent(`{}`, onTool(c.tool), tenant(c.tenant))
		req, err := NewInvokeRequest(in, Tool{Name: c.tool})
		if err != nil {
			t.Fatal(err)
		}
		d := s.Invoke(req)
		if !d.Allow || d.ApprovalRequired != c.required || d.Approvers != c.approvers {
			t.Errorf("%s for %s: %+v, want approval %v and %d approvers", c.tool, c.tenant, d, c.required, c.approvers)
		}
	}
}
