package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
)

// The Writ entity model (docs/policy.md, "Entities"). Entity ids are the
// identities as the protocol carries them, unprefixed: principal "bot" of any
// tenant is Writ::Agent::"bot", so a policy that means one tenant must say so
// with principal.tenant.
const (
	// TypeAgent is the principal of invoke: the intent's principal.
	TypeAgent cedar.EntityType = "Writ::Agent"
	// TypeApprover is the principal of approve: the approval's approver.
	TypeApprover cedar.EntityType = "Writ::Approver"
	// TypeTool is the resource of both actions: the intent's tool.
	TypeTool cedar.EntityType = "Writ::Tool"
	// TypeAction is the type of the two actions.
	TypeAction cedar.EntityType = "Writ::Action"

	// ActionInvoke and ActionApprove are the action ids.
	ActionInvoke  = "invoke"
	ActionApprove = "approve"
)

var (
	actionInvoke  = cedar.NewEntityUID(TypeAction, ActionInvoke)
	actionApprove = cedar.NewEntityUID(TypeAction, ActionApprove)
)

// Tool is what policy sees of a registered tool manifest.
type Tool struct {
	Name string
	// Tenant is the one tenant the tool is registered for, or "" for a tool
	// every tenant may be granted (the only kind the control plane registers
	// today). Policy always sees the attribute, "" included, so that
	// resource.tenant never fails as a missing attribute.
	Tenant           string
	Capabilities     []string
	Sandbox          string
	RequiresApproval bool
}

func (t Tool) entity() cedar.Entity {
	return cedar.Entity{
		UID: cedar.NewEntityUID(TypeTool, cedar.String(t.Name)),
		Attributes: cedar.NewRecord(cedar.RecordMap{
			"name":              cedar.String(t.Name),
			"tenant":            cedar.String(t.Tenant),
			"capabilities":      stringSet(t.Capabilities),
			"sandbox":           cedar.String(t.Sandbox),
			"requires_approval": cedar.Boolean(t.RequiresApproval),
		}),
	}
}

// person is an Agent or an Approver. name repeats the id as a String because
// Cedar cannot read an entity's id, and a policy must be able to compare an
// approver with the intent's principal (context.principal != principal.name).
func person(typ cedar.EntityType, name, tenant string) cedar.Entity {
	return cedar.Entity{
		UID: cedar.NewEntityUID(typ, cedar.String(name)),
		Attributes: cedar.NewRecord(cedar.RecordMap{
			"name":   cedar.String(name),
			"tenant": cedar.String(tenant),
		}),
	}
}

// stringSet is a list of strings as a Cedar set (order and duplicates are lost).
func stringSet(ss []string) cedar.Set {
	vs := make([]cedar.Value, len(ss))
	for i, s := range ss {
		vs[i] = cedar.String(s)
	}
	return cedar.NewSet(vs...)
}
