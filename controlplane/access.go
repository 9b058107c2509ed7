package controlplane

import (
	"fmt"
	"strings"
)

// The access matrix: for every route the API and the dashboard serve, what
// each kind of caller gets. It is the one statement of who may read and do
// what; docs/controlplane.md (Access) prints it (AccessTable) and
// TestAccessMatrix walks every registered route with every kind of caller and
// checks the answers against it. A route registered without a row here fails
// that test.

// Access is what one kind of caller gets from one route.
type Access string

const (
	// AccessYes: served.
	AccessYes Access = "yes"
	// AccessNo: refused (unauthorized, forbidden, or sent to sign in).
	AccessNo Access = "no"
	// AccessHash: the receipt's leaf hash, its inclusion proof and the
	// checkpoint, none of the receipt's content.
	AccessHash Access = "hash"
	// AccessHidden: not_found, exactly as for what does not exist.
	AccessHidden Access = "not found"
	// AccessBody: authorized by the signed object or token in the body,
	// whoever sends it; the caller's credentials change nothing.
	AccessBody Access = "by body"
)

// Caller kinds, the matrix's columns. "Tenant" is the tenant whose object
// the route names (for a route that names none, any tenant).
const (
	KindNone         = "none"
	KindOtherTenant  = "other tenant's key"
	KindTenant       = "tenant's key"
	KindViewer       = "viewer"
	KindViewerOther  = "viewer of another tenant"
	KindApprover     = "approver"
	KindAuditor      = "auditor"
	KindAuditorOther = "auditor of another tenant"
	KindAdmin        = "admin"
)

// AccessKinds are the columns, in order: no credentials; a read signed with
// an orchestrator key of another tenant or of the tenant (X-Writ-Signature);
// the dashboard's session cookie of a viewer limited to the tenant or to
// another one, or of the tenant's approver; an auditor token of the tenant
// or of another one (a bearer); the admin token (a bearer, and the admin's
// session on the dashboard).
var AccessKinds = []string{KindNone, KindOtherTenant, KindTenant, KindViewer, KindViewerOther, KindApprover,
	KindAuditor, KindAuditorOther, KindAdmin}

// RouteAccess is one row: a route's pattern as registered, what each kind
// gets (in AccessKinds order), and a note.
type RouteAccess struct {
	Pattern string
	Access  []Access
	Note    string
}

func row(pattern, note string, a ...Access) RouteAccess {
	return RouteAccess{Pattern: pattern, Access: a, Note: note}
}

// accessMatrix is the matrix, in the order the routes are registered.
var accessMatrix = func() []RouteAccess {
	const (
		yes    = AccessYes
		no     = AccessNo
		hash   = AccessHash
		hidden = AccessHidden
		body   = AccessBody
	)
	return []RouteAccess{
		// pattern, note, then what each kind gets: none, other tenant, tenant,
		// viewer, viewer of another tenant, approver, auditor, auditor of
		// another tenant, admin.
		row("POST /v1/intents", "the intent's HMAC signature (its tenant's key) authorizes it",
			body, body, body, body, body, body, body, body, body),
		row("GET /v1/intents", "intent summaries (no params, no output), each caller only of the tenants it sees: a tenant's key and an auditor its tenant's, an auditor of all and the admin every tenant's",
			no, yes, yes, no, no, no, yes, yes, yes),
		row("GET /v1/intents/{id}", "",
			no, hidden, yes, no, no, no, no, no, yes),
		row("GET /v1/intents/{id}/output", "the tool's output; also an auditor of the tenant whose token grants outputs",
			no, hidden, yes, hidden, hidden, hidden, hidden, hidden, yes),
		row("POST /v1/intents/{id}/cancel", "signed by the intent's tenant (a signed read of this path), or the admin token; answers like GET /v1/intents/{id}",
			no, hidden, yes, no, no, no, no, no, yes),
		row("POST /v1/tenants/{tenant}/runs/{run}/cancel", "signed by the run's tenant (a signed read of this path), or the admin token",
			no, hidden, yes, no, no, no, no, no, yes),
		row("POST /v1/approvals", "the approval's Ed25519 signature authorizes it; with a session cookie, only the session's approver, with its CSRF token",
			body, body, body, body, body, body, body, body, body),
		row("GET /v1/events", "a session (from a page of this origin) or the admin token; each event only to those who may view its tenant",
			no, no, no, yes, yes, yes, no, no, yes),
		row("GET /{$}", "redirects to /ui/",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("POST /v1/admin/tokens", "",
			no, no, no, no, no, no, no, no, yes),
		row("DELETE /v1/admin/tokens/{id}", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/tokens", "the issued tokens (no secret): id, role, tenant, expiry",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/sessions", "the open dashboard sessions",
			no, no, no, no, no, no, no, no, yes),
		row("DELETE /v1/admin/sessions/{id}", "ends a dashboard session",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/tools", "the catalog: names, schemas, tiers (or, with ?format=openai or anthropic, those APIs' tool definitions); no tenant's data",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /v1/health", "",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /v1/version", "the build's version, commit, Go and protocol versions",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /metrics", "counts by state, code and reason; no tenant's data",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("PUT /v1/admin/tenants/{tenant}", "",
			no, no, no, no, no, no, no, no, yes),
		row("PUT /v1/admin/tenants/{tenant}/keys/{key}", "",
			no, no, no, no, no, no, no, no, yes),
		row("DELETE /v1/admin/tenants/{tenant}/keys/{key}", "",
			no, no, no, no, no, no, no, no, yes),
		row("PUT /v1/admin/tenants/{tenant}/approvers/{key}", "",
			no, no, no, no, no, no, no, no, yes),
		row("DELETE /v1/admin/tenants/{tenant}/approvers/{key}", "",
			no, no, no, no, no, no, no, no, yes),
		row("PUT /v1/admin/tools", "",
			no, no, no, no, no, no, no, no, yes),
		row("PUT /v1/admin/policy", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/policy", "the installed policy set: text, hash, version",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/webhooks", "the webhooks (no secret) and this server's delivery log",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/policy/versions", "the kept policy versions (no text)",
			no, no, no, no, no, no, no, no, yes),
		row("POST /v1/admin/policy/rollback", "reinstalls a kept version's text as a new version",
			no, no, no, no, no, no, no, no, yes),
		row("POST /v1/admin/policy/dry-run", "replays recent intents' authorization against a candidate policy; answers intent ids, principals and tools, never params",
			no, no, no, no, no, no, no, no, yes),
		row("POST /v1/admin/locks", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/admin/locks", "the locks in force",
			no, no, no, no, no, no, no, no, yes),
		row("DELETE /v1/admin/locks/{id}", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/receipts/{index}", "an auditor gets a receipt whose result carries a tool's output (writ.result/v1) only with the outputs grant, else its hash; an admin entry (writ.admin/v1) goes only to the admin and the auditors who see its tenant, others get its hash",
			hash, hidden, yes, yes, hash, yes, yes, hidden, yes),
		row("GET /v1/ledger/checkpoint", "",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /v1/ledger/consistency", "",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /v1/ledger/admin", "admin entries, newest first; an auditor only those of the tenants it sees (of all: every one)",
			no, no, no, no, no, no, yes, yes, yes),
		row("POST /v1/admin/join-tokens", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/enroll/ca", "the cluster CA's certificate, which a join token pins",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("POST /v1/enroll", "the join token in the body authorizes it",
			body, body, body, body, body, body, body, body, body),
		row("GET /v1/nodes", "",
			no, no, no, no, no, no, no, no, yes),
		row("GET /v1/nodes/{id}", "",
			no, no, no, no, no, no, no, no, yes),
		row("POST /v1/admin/nodes/{id}/{action}", "",
			no, no, no, no, no, no, no, no, yes),
		row("POST /v1/internal/apply", "only a server of the cluster (its certificate, over mutual TLS)",
			no, no, no, no, no, no, no, no, no),
		row("POST /v1/internal/submit-batch", "only a server of the cluster (its certificate, over mutual TLS)",
			no, no, no, no, no, no, no, no, no),
		row("GET /v1/internal/heartbeats", "only a server of the cluster (its certificate, over mutual TLS)",
			no, no, no, no, no, no, no, no, no),
		row("/", "any other path: not_found",
			hidden, hidden, hidden, hidden, hidden, hidden, hidden, hidden, hidden),

		// The dashboard (web/), in front of the API.
		row("GET /ui/static/", "scripts, styles",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /ui/signin", "",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("POST /ui/signin", "the token in the form authorizes it; an auditor token does not sign in",
			body, body, body, body, body, body, body, body, body),
		row("POST /ui/signout", "ends the session the cookie names, if any",
			yes, yes, yes, yes, yes, yes, yes, yes, yes),
		row("GET /ui/{$}", "the overview; a viewer or approver of one tenant sees that tenant's traffic only",
			no, no, no, yes, yes, yes, no, no, yes),
		row("GET /ui/fleet", "nodes; no tenant's data",
			no, no, no, yes, yes, yes, no, no, yes),
		row("GET /ui/fleet/{id}", "a node; its recent dispatches of the tenants the session may view",
			no, no, no, yes, yes, yes, no, no, yes),
		row("POST /ui/fleet/{id}/{action}", "drain, ready, revoke; with the session's CSRF token",
			no, no, no, no, no, no, no, no, yes),
		row("GET /ui/approvals", "pending intents of the tenants the session may view",
			no, no, no, yes, yes, yes, no, no, yes),
		row("GET /ui/intents", "asked for the tenant: a session limited to another tenant is refused",
			no, no, no, yes, no, yes, no, no, yes),
		row("GET /ui/intents/{id}", "",
			no, no, no, yes, hidden, yes, no, no, yes),
		row("GET /ui/ledger", "receipts of other tenants than the session's show as their hashes",
			no, no, no, yes, yes, yes, no, no, yes),
		row("GET /ui/audit", "the admin record and the locks in force, with the form that makes a lock",
			no, no, no, no, no, no, no, no, yes),
		row("POST /ui/locks", "makes a lock; with the session's CSRF token",
			no, no, no, no, no, no, no, no, yes),
		row("POST /ui/locks/{id}/delete", "removes a lock; with the session's CSRF token",
			no, no, no, no, no, no, no, no, yes),
		row("/ui/", "any other page: not_found",
			hidden, hidden, hidden, hidden, hidden, hidden, hidden, hidden, hidden),
	}
}()

// AccessMatrix returns the matrix's rows.
func AccessMatrix() []RouteAccess {
	out := make([]RouteAccess, len(accessMatrix))
	copy(out, accessMatrix)
	return out
}

// AccessTable renders the matrix as the Markdown table docs/controlplane.md
// carries.
func AccessTable() string {
	var b strings.Builder
	b.WriteString("| Route |")
	for _, k := range AccessKinds {
		fmt.Fprintf(&b, " %s |", k)
	}
	b.WriteString(" Note |\n|---|")
	for range AccessKinds {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, r := range accessMatrix {
		fmt.Fprintf(&b, "| `%s` |", r.Pattern)
		for _, a := range r.Access {
			fmt.Fprintf(&b, " %s |", a)
		}
		fmt.Fprintf(&b, " %s |\n", r.Note)
	}
	return b.String()
}
