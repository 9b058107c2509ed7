package policy

import (
	"fmt"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// attributes are the members the entity model gives each variable
// (docs/policy.md). principal is an Agent or an Approver, which have the same
// attributes; context is the union of both actions' contexts.
var attributes = map[types.String]map[types.String]bool{
	"principal": {"name": true, "tenant": true},
	"action":    {},
	"resource": {"name": true, "tenant": true, "capabilities": true, "sandbox": true,
		"requires_approval": true},
	"context": {"intent_id": true, "tenant": true, "run_id": true, "capabilities": true,
		"params": true, "channel": true, "device": true, "node": true, "labels": true,
		"intent_context": true, "principal": true, "decision": true},
}

// checkAttributes refuses a policy that reads, or tests with `has`, a member
// the entity model does not have, such as context.parms. Evaluated, the read
// would fail and deny every request it meets, and the `has` test would be
// always false, silently disarming a forbid guarded by it. Members below
// context.params and context.intent_context are the intent's own and are not
// checked.
//
// It walks the policy with cedar-go's experimental x/exp/ast: an upgrade that
// changes it breaks the build, never the check.
func checkAttributes(p *cedar.Policy, id string) error {
	var bad error
	for _, c := range (*xast.Policy)(p.AST()).Conditions {
		xast.Inspect(xast.NewNode(c.Body), func(n xast.IsNode) bool {
			var op xast.StrOpNode
			switch n := n.(type) {
			case xast.NodeTypeAccess:
				op = n.StrOpNode
			case xast.NodeTypeHas:
				op = n.StrOpNode
			default:
				return bad == nil
			}
			if v, ok := op.Arg.(xast.NodeTypeVariable); ok && !attributes[v.Name][op.Value] && bad == nil {
				bad = policyError(p, id, fmt.Errorf("%w: %s.%s", ErrUnknownAttribute, v.Name, op.Value))
			}
			return bad == nil
		})
	}
	return bad
}
