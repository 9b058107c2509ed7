package controlplane

import (
	"bytes"
	"sync"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/controlplane/internal/tools"
)

// catalog keeps the parsed forms of what the FSM stores as text: tool
// registrations with their compiled schemas, and the policy set. A parsed
// form is used only for exactly the text it was parsed from (a tool's whole
// registration, the policy set's hash of its text), so a change in the FSM is
// a miss, never a stale hit. A tool's manifest hash does not do: a tool
// registered again with the same manifest may change its schema,
// capabilities or approvals (TestToolReregisteredSameManifest).
type catalog struct {
	f fsm.Reader

	mu       sync.Mutex
	tools    map[string]parsedTool // by name
	policy   *policy.Set
	policyOf string // hash of the parsed policy
}

// parsedTool is a tool parsed from the registration spec.
type parsedTool struct {
	spec []byte
	tool *tools.Tool
}

func newCatalog(f fsm.Reader) *catalog { return &catalog{f: f, tools: map[string]parsedTool{}} }

// tool returns the registered tool called name.
func (c *catalog) tool(name string) (*tools.Tool, bool) {
	rec, ok := c.f.Tool(name)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.tools[name]; ok && bytes.Equal(p.spec, rec.Spec) {
		return p.tool, true
	}
	t, err := tools.Parse(rec.Spec)
	if err != nil || t.Name != name {
		return nil, false // the leader parsed it before proposing; fail closed
	}
	c.tools[name] = parsedTool{spec: bytes.Clone(rec.Spec), tool: t}
	return t, true
}

// policySet returns the current policy set. An unreadable policy fails closed:
// the empty set, which denies everything.
func (c *catalog) policySet() *policy.Set {
	p := c.f.Policy()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.policy != nil && c.policyOf == p.Hash {
		return c.policy
	}
	set, err := policy.Parse([]byte(p.Text))
	if err != nil {
		set, _ = policy.Parse(nil)
	}
	c.policy, c.policyOf = set, p.Hash
	return set
}

func policyTool(t *tools.Tool) policy.Tool {
	return policy.Tool{Name: t.Name, Capabilities: t.Capabilities, Sandbox: t.Tier, RequiresApproval: t.NeedsApproval()}
}
