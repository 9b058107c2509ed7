package policy_test

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

func Example() {
	set, err := policy.Parse([]byte(`
@id("acme.pay")
permit (principal, action == Writ::Action::"invoke", resource == Writ::Tool::"pay")
when { principal.tenant == "acme" };

@id("acme.pay.large") @approval("required")
permit (principal, action == Writ::Action::"invoke", resource == Writ::Tool::"pay")
when { context.params.amount_cents > 50000 };

@id("acme.pay.limit")
forbid (principal, action == Writ::Action::"invoke", resource == Writ::Tool::"pay")
when { context.params.amount_cents > 1000000 };
`))
	if err != nil {
		panic(err)
	}
	tool := policy.Tool{Name: "pay", Sandbox: "process"}
	for _, params := range []string{`{"amount_cents": 100}`, `{"amount_cents": 60000}`, `{"amount_cents": 2000000}`, `{}`} {
		in := &protocol.Intent{ID: "in-1", Tenant: "acme", Principal: "bot", RunID: "run-1", Tool: "pay",
			Params: jsontext.Value(params)}
		req, err := policy.NewInvokeRequest(in, tool)
		if err != nil {
			panic(err)
		}
		d := set.Invoke(req)
		fmt.Println(d.Allow, d.ApprovalRequired, d.Policies, len(d.Errors))
	}
	// Output:
	// true false [acme.pay] 0
	// true true [acme.pay acme.pay.large] 0
	// false false [acme.pay.limit] 0
	// false false [acme.pay.large acme.pay.limit] 2
}
