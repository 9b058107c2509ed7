package controlplane

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/controlplane/internal/tools"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// adminAPI is the admin area of the API: tenants, keys, tools, the policy
// set and its versions, webhooks, dashboard tokens and sessions, locks. Every call
// needs an admin token or an admin's dashboard session; no call ever returns
// a secret. Its handlers are in admin.go, policyapi.go, webhooks.go,
// dashtokens.go, dashsessions.go and locks.go.
type adminAPI struct{ srv *Server }

// routes registers the admin area.
func (ep adminAPI) routes(mux *routeMux) {
	au := ep.srv.auth()
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}", au.admin(ep.handlePutTenant))
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}/keys/{key}", au.admin(ep.handlePutIntentKey))
	mux.HandleFunc("DELETE /v1/admin/tenants/{tenant}/keys/{key}", au.admin(ep.handleDeleteKey(fsm.MsgDeleteIntentKey)))
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}/approvers/{key}", au.admin(ep.handlePutApprover))
	mux.HandleFunc("DELETE /v1/admin/tenants/{tenant}/approvers/{key}", au.admin(ep.handleDeleteKey(fsm.MsgDeleteApproverKey)))
	mux.HandleFunc("PUT /v1/admin/tools", au.admin(ep.handlePutTool))
	mux.HandleFunc("PUT /v1/admin/policy", au.admin(ep.handlePutPolicy))
	// The policy's life cycle: read the installed set, list the kept
	// versions, roll back to one (a new version with its text), and replay
	// recent authorization requests against a candidate before applying it.
	mux.HandleFunc("GET /v1/admin/policy", au.adminJSON(ep.handleGetPolicy))
	mux.HandleFunc("GET /v1/admin/policy/versions", au.adminJSON(ep.handlePolicyVersions))
	mux.HandleFunc("POST /v1/admin/policy/rollback", au.admin(ep.handlePolicyRollback))
	mux.HandleFunc("POST /v1/admin/policy/dry-run", au.adminJSON(ep.handlePolicyDryRun))
	mux.HandleFunc("GET /v1/admin/webhooks", au.adminJSON(ep.handleWebhooks))
	// Dashboard tokens and sessions: what an admin needs to see who can
	// sign in and who is signed in, and to end a session. Nothing listed is
	// a credential: tokens and sessions are kept by hashes, and those are
	// not listed either.
	mux.HandleFunc("POST /v1/admin/tokens", au.adminJSON(ep.handleCreateToken))
	mux.HandleFunc("DELETE /v1/admin/tokens/{id}", au.admin(ep.handleDeleteToken))
	mux.HandleFunc("GET /v1/admin/tokens", au.adminJSON(ep.handleListTokens))
	mux.HandleFunc("GET /v1/admin/sessions", au.adminJSON(ep.handleListSessions))
	mux.HandleFunc("DELETE /v1/admin/sessions/{id}", au.admin(ep.handleRevokeSession))
	// Locks (locks.go): a tenant, principal, tool or node held until deleted
	// or expired.
	mux.HandleFunc("POST /v1/admin/locks", au.adminJSON(ep.handleCreateLock))
	mux.HandleFunc("GET /v1/admin/locks", au.adminJSON(ep.handleListLocks))
	mux.HandleFunc("DELETE /v1/admin/locks/{id}", au.adminJSON(ep.handleDeleteLock))
}

// admin wraps a handler with the admin token check. Tokens are compared by
// their hashes, in constant time, against every configured hash.
func (au auth) admin(h func(http.ResponseWriter, *http.Request) *apiError) http.HandlerFunc {
	return au.adminJSON(func(w http.ResponseWriter, r *http.Request) (any, *apiError) {
		if aerr := h(w, r); aerr != nil {
			return nil, aerr
		}
		return map[string]bool{"ok": true}, nil
	})
}

func (au auth) adminToken(token string) bool {
	sum := sha256.Sum256([]byte(token))
	got := []byte(protocol.FormatHash(sum))
	match := 0
	for _, h := range au.srv.cfg.AdminTokenHashes {
		match |= subtle.ConstantTimeCompare(got, []byte(h))
	}
	return match == 1 && token != ""
}

func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, aerr := readBody(w, r, 1<<20)
	if aerr != nil {
		return aerr
	}
	if err := jsonx.UnmarshalStrict(body, v); err != nil {
		return refusal(protocol.CodeMalformed, err.Error())
	}
	return nil
}

func (ep adminAPI) handlePutTenant(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.TenantRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	return ep.PutTenant(r.Context(), r.PathValue("tenant"), b.RunBudget)
}

func (ep adminAPI) handlePutIntentKey(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.IntentKeyRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	secret, err := base64.StdEncoding.DecodeString(b.Secret)
	if err != nil {
		return refusal(protocol.CodeMalformed, "secret must be standard base64")
	}
	return ep.PutIntentKey(r.Context(), r.PathValue("tenant"), r.PathValue("key"), secret)
}

func (ep adminAPI) handlePutApprover(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.ApproverKeyRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	pub, err := base64.StdEncoding.DecodeString(b.Public)
	if err != nil {
		return refusal(protocol.CodeMalformed, "public must be standard base64")
	}
	return ep.PutApproverKey(r.Context(), r.PathValue("tenant"), r.PathValue("key"), pub, b.Approver)
}

func (ep adminAPI) handleDeleteKey(t fsm.MsgType) func(http.ResponseWriter, *http.Request) *apiError {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		return ep.srv.adminApply(r.Context(), t, fsm.DeleteKey{Tenant: r.PathValue("tenant"), KeyID: r.PathValue("key")})
	}
}

func (ep adminAPI) handlePutTool(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := readBody(w, r, 1<<20)
	if aerr != nil {
		return aerr
	}
	return ep.PutTool(r.Context(), body)
}

func (ep adminAPI) handlePutPolicy(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := readBody(w, r, policy.MaxTextBytes)
	if aerr != nil {
		return aerr
	}
	return ep.PutPolicy(r.Context(), body)
}

// adminApply proposes an admin change, recorded in the ledger with the
// context's actor.
func (s *Server) adminApply(ctx context.Context, t fsm.MsgType, cmd any) *apiError {
	res, err := s.applyAdminChange(ctx, t, cmd)
	if err != nil {
		return raftError(err)
	}
	if res.Err != nil {
		return refusal(res.Err.Code, res.Err.Message)
	}
	return nil
}

// PutTenant creates or updates a tenant and its run budget (0: none).
func (ep adminAPI) PutTenant(ctx context.Context, tenant string, runBudget int64) *apiError {
	if !validID(tenant) || runBudget < 0 {
		return refusal(protocol.CodeMalformed, "tenant must be an id and run_budget not negative")
	}
	return ep.srv.adminApply(ctx, fsm.MsgPutTenant, fsm.PutTenant{Tenant: tenant, RunBudget: runBudget})
}

// PutIntentKey registers an orchestrator HMAC secret, sealed before it is
// proposed.
func (ep adminAPI) PutIntentKey(ctx context.Context, tenant, keyID string, secret []byte) *apiError {
	if !validID(tenant) || !validID(keyID) || len(secret) < 32 {
		return refusal(protocol.CodeMalformed, "tenant and key id must be ids, the secret at least 32 bytes")
	}
	return ep.srv.adminApply(ctx, fsm.MsgPutIntentKey, fsm.PutIntentKey{Tenant: tenant, KeyID: keyID, Sealed: ep.srv.keys.Seal(secret, sealContext(tenant, keyID))})
}

// PutApproverKey registers an approver's Ed25519 public key and identity.
func (ep adminAPI) PutApproverKey(ctx context.Context, tenant, keyID string, pub []byte, approver string) *apiError {
	if !validID(tenant) || !validID(keyID) || len(pub) != ed25519.PublicKeySize || approver == "" {
		return refusal(protocol.CodeMalformed, "tenant and key id must be ids, the key 32 bytes, the approver named")
	}
	return ep.srv.adminApply(ctx, fsm.MsgPutApproverKey, fsm.PutApproverKey{Tenant: tenant, KeyID: keyID, Public: pub, Approver: approver})
}

// PutTool registers a tool (controlplane/internal/tools.Spec as JSON).
func (ep adminAPI) PutTool(ctx context.Context, spec []byte) *apiError {
	t, err := tools.Parse(spec)
	if err != nil {
		return refusal(protocol.CodeMalformed, err.Error())
	}
	canon, err := protocol.Canonicalize(mustMarshal(t.Spec))
	if err != nil {
		return fromProtocol(err)
	}
	return ep.srv.adminApply(ctx, fsm.MsgPutTool, fsm.PutTool{
		Name: t.Name, Hash: t.Hash, Spec: canon, Tier: t.Tier, TimeoutMS: t.TimeoutMS, Selector: t.NodeSelector,
	})
}

// PutPolicy installs a Cedar policy set, refused unless it parses.
func (ep adminAPI) PutPolicy(ctx context.Context, text []byte) *apiError {
	set, err := policy.Parse(text)
	if err != nil {
		return refusal(protocol.CodeMalformed, err.Error())
	}
	return ep.srv.adminApply(ctx, fsm.MsgPutPolicy, fsm.PutPolicy{Text: string(text), Hash: set.Hash(), At: ep.srv.now()})
}

func validID(s string) bool {
	if s == "" || len(s) > protocol.MaxIDLen {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
