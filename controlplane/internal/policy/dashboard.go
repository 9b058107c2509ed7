package policy

import (
	"fmt"

	cedar "github.com/cedar-policy/cedar-go"
)

// The dashboard's entity model. A signed-in user is the principal:
// Writ::Admin::"<user>", Writ::Viewer::"<user>", or, for an approver,
// Writ::Approver::"<approver identity>" — the same entity the approve action
// sees. Each has name and tenant ("" for every tenant). The resource is the
// part of the dashboard acted on, Writ::Page::"<page>", with name and tenant
// (the tenant of what is shown, "" for cluster-wide pages). The actions are
// view, decide (approve or deny an intent, offered in the UI) and manage
// (drain or revoke nodes); decide has the intent's principal in
// context.principal.
const (
	TypeAdmin  cedar.EntityType = "Writ::Admin"
	TypeViewer cedar.EntityType = "Writ::Viewer"
	TypePage   cedar.EntityType = "Writ::Page"

	ActionView   = "view"
	ActionDecide = "decide"
	ActionManage = "manage"
)

// The dashboard pages, as resource ids.
const (
	PageOverview  = "overview"
	PageFleet     = "fleet"
	PageIntents   = "intents"
	PageApprovals = "approvals"
	PageLedger    = "ledger"
)

// DashboardPolicy is the built-in policy of dashboard roles: admins view and
// manage everything; viewers and approvers view, within their tenant when
// bound to one; approvers decide on their own tenant's intents, never on
// their own.
const DashboardPolicy = `// The dashboard's roles (docs/dashboard.md).

@id("dashboard.admin")
permit (principal is Writ::Admin, action in [Writ::Action::"view", Writ::Action::"manage"], resource);

@id("dashboard.view")
permit (principal, action == Writ::Action::"view", resource)
when {
  (principal is Writ::Viewer || principal is Writ::Approver) &&
  (principal.tenant == "" || resource.tenant == "" || principal.tenant == resource.tenant)
};

@id("dashboard.decide")
permit (principal is Writ::Approver, action == Writ::Action::"decide", resource == Writ::Page::"approvals")
when { principal.tenant != "" && principal.tenant == resource.tenant };

@id("dashboard.decide.not-self")
forbid (principal, action == Writ::Action::"decide", resource)
when { context.principal == principal.name };
`

// DashboardUser is who is signed in: Role is admin, viewer or approver; Name
// the user id, or for an approver the approver identity; Tenant "" for every
// tenant.
type DashboardUser struct {
	Role, Name, Tenant string
}

// DashboardRequest asks whether a user may take an action on a page. Build it
// with NewDashboardRequest; the zero value is refused.
type DashboardRequest struct {
	built bool
	req   request
}

// NewDashboardRequest maps a dashboard question onto the entity model.
// intentPrincipal is the principal of the intent decided on (decide), or "".
// ErrInput is returned for an unknown role.
func NewDashboardRequest(u DashboardUser, action, page, tenant, intentPrincipal string) (DashboardRequest, error) {
	typ, ok := map[string]cedar.EntityType{"admin": TypeAdmin, "viewer": TypeViewer, "approver": TypeApprover}[u.Role]
	if !ok {
		return DashboardRequest{}, fmt.Errorf("%w: role %q", ErrInput, u.Role)
	}
	res := cedar.Entity{
		UID: cedar.NewEntityUID(TypePage, cedar.String(page)),
		Attributes: cedar.NewRecord(cedar.RecordMap{
			"name":   cedar.String(page),
			"tenant": cedar.String(tenant),
		}),
	}
	ctx := cedar.RecordMap{"principal": cedar.String(intentPrincipal), "tenant": cedar.String(tenant)}
	return DashboardRequest{built: true, req: newRequest(person(typ, u.Name, u.Tenant), cedar.NewEntityUID(TypeAction, cedar.String(action)), res, ctx)}, nil
}

// Dashboard decides a DashboardRequest; it never fails, and an evaluation
// error denies.
func (s *Set) Dashboard(req DashboardRequest) Decision {
	if !req.built {
		return refused("dashboard request was not built with NewDashboardRequest")
	}
	if s == nil {
		return refused("no policy set")
	}
	return s.authorize(req.req, false)
}
