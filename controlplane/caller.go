package controlplane

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// The kinds of caller a read can come from (docs/controlplane.md, Access).
const (
	callerNone    = "none"    // no credentials: what is public
	callerTenant  = "tenant"  // a request signed with an orchestrator key
	callerAuditor = "auditor" // an auditor token as a bearer
	callerAdmin   = "admin"   // an admin token as a bearer
	callerSession = "session" // the dashboard's session cookie
)

// caller is who a read comes from, and what it may see.
type caller struct {
	kind string
	// tenant is the one tenant the caller sees; all says it sees every one.
	tenant string
	all    bool
	// outputs says an auditor may read tools' outputs.
	outputs bool
	// principal is a session's, for the dashboard's policy.
	principal web.Principal
}

// sees reports whether the caller may read tenant's objects.
func (c caller) sees(tenant string) bool {
	return c.all || (c.tenant != "" && c.tenant == tenant)
}

// readsOutputOf reports whether the caller may read the tools' outputs of
// tenant's intents: a read signed by the tenant, an auditor of the tenant
// (or of all) granted outputs, or the admin. A route that serves outputs
// answers anyone else not_found (or, without credentials, unauthorized).
func (c caller) readsOutputOf(tenant string) bool {
	switch c.kind {
	case callerAdmin:
		return true
	case callerTenant, callerAuditor:
		return c.outputs && c.sees(tenant)
	}
	return false
}

// auth authenticates the API's callers: the admin token, auditor tokens,
// reads signed with an orchestrator key, dashboard sessions, and the budget
// of failed attempts per source (failure.go). Every area's routes wrap their
// handlers with it (admin, adminJSON, in admin.go and nodesapi.go).
type auth struct{ srv *Server }

func (s *Server) auth() auth { return auth{s} }

// callerOf authenticates a read that public callers may also make: a bearer
// token (admin or auditor), a request signed with an orchestrator key, the
// dashboard's session cookie, or nothing. Credentials that are sent and do
// not verify are refused, never taken for none.
func (au auth) callerOf(r *http.Request) (caller, *apiError) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if au.adminToken(token) {
			return caller{kind: callerAdmin, all: true, outputs: true}, nil
		}
		if u, ok := au.userToken(token); ok && u.Role == fsm.RoleAuditor {
			return caller{kind: callerAuditor, tenant: u.Tenant, all: u.Tenant == "", outputs: u.Outputs}, nil
		}
		return caller{}, refusal(protocol.CodeUnauthorized, "the token is not valid")
	}
	if r.Header.Get(protocol.HeaderSignature) != "" {
		tenant, _, aerr := au.reader(r)
		if aerr != nil {
			return caller{}, aerr
		}
		return caller{kind: callerTenant, tenant: tenant, outputs: true}, nil
	}
	if au.srv.dash != nil {
		if p, ok := au.srv.dash.Principal(r); ok {
			return caller{kind: callerSession, principal: p}, nil
		}
	}
	return caller{kind: callerNone}, nil
}

// userToken finds the user a "wu1." token names, if the token is its and has
// not expired.
func (au auth) userToken(token string) (fsm.User, bool) {
	id, secret, ok := parseUserToken(token)
	if !ok {
		return fsm.User{}, false
	}
	u, ok := au.srv.reads.User(id)
	if !ok || subtle.ConstantTimeCompare([]byte(u.Hash), []byte(protocol.HashBytes(secret))) != 1 || !u.ExpiresAt.After(au.srv.now()) {
		return fsm.User{}, false
	}
	return u, true
}
