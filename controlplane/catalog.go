package controlplane

import (
	"sync"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/controlplane/internal/tools"
)

// catalog keeps the parsed forms of what the FSM stores as text: tool
// registrations with their compiled schemas, and the policy set. Entries are
// keyed by hash, so a change in the FSM is a miss, never a stale hit.
type catalog struct {
	f fsm.Reader

	mu       sync.Mutex
	tools    map[string]*tools.Tool // by manifest hash
	policy   *policy.Set
	policyOf string // hash of the parsed policy
}

func newCatalog(f fsm.Reader) *catalog { return &catalog{f: f, tools: map[string]*tools.Tool{}} }

// tool returns the registered tool called name.
func (c *catalog) tool(name string) (*tools.Tool, bool) {
	rec, ok := c.f.Tool(name)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tools[rec.Hash]; ok && t.Name == name {
		return t, true
	}
	t, err := tools.Parse(rec.Spec)
	if err != nil {
		return nil, false // the leader parsed it before proposing; fail closed
	}
	c.tools[rec.Hash] = t
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
