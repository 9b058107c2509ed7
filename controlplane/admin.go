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

// The admin API manages tenants, keys, tools and the policy set. Every call
// needs an admin token; no call ever returns a secret.
func (s *Server) adminRoutes(mux *routeMux) {
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}", s.admin(s.handlePutTenant))
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}/keys/{key}", s.admin(s.handlePutIntentKey))
	mux.HandleFunc("DELETE /v1/admin/tenants/{tenant}/keys/{key}", s.admin(s.handleDeleteKey(fsm.MsgDeleteIntentKey)))
	mux.HandleFunc("PUT /v1/admin/tenants/{tenant}/approvers/{key}", s.admin(s.handlePutApprover))
	mux.HandleFunc("DELETE /v1/admin/tenants/{tenant}/approvers/{key}", s.admin(s.handleDeleteKey(fsm.MsgDeleteApproverKey)))
	mux.HandleFunc("PUT /v1/admin/tools", s.admin(s.handlePutTool))
	mux.HandleFunc("PUT /v1/admin/policy", s.admin(s.handlePutPolicy))
}

// admin wraps a handler with the admin token check. Tokens are compared by
// their hashes, in constant time, against every configured hash.
func (s *Server) admin(h func(http.ResponseWriter, *http.Request) *apiError) http.HandlerFunc {
	return s.adminJSON(func(w http.ResponseWriter, r *http.Request) (any, *apiError) {
		if aerr := h(w, r); aerr != nil {
			return nil, aerr
		}
		return map[string]bool{"ok": true}, nil
	})
}

func (s *Server) adminToken(token string) bool {
	sum := sha256.Sum256([]byte(token))
	got := []byte(protocol.FormatHash(sum))
	match := 0
	for _, h := range s.cfg.AdminTokenHashes {
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

func (s *Server) handlePutTenant(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.TenantRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	return s.PutTenant(r.Context(), r.PathValue("tenant"), b.RunBudget)
}

func (s *Server) handlePutIntentKey(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.IntentKeyRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	secret, err := base64.StdEncoding.DecodeString(b.Secret)
	if err != nil {
		return refusal(protocol.CodeMalformed, "secret must be standard base64")
	}
	return s.PutIntentKey(r.Context(), r.PathValue("tenant"), r.PathValue("key"), secret)
}

func (s *Server) handlePutApprover(w http.ResponseWriter, r *http.Request) *apiError {
	var b protocol.ApproverKeyRequest
	if aerr := decodeAdmin(w, r, &b); aerr != nil {
		return aerr
	}
	pub, err := base64.StdEncoding.DecodeString(b.Public)
	if err != nil {
		return refusal(protocol.CodeMalformed, "public must be standard base64")
	}
	return s.PutApproverKey(r.Context(), r.PathValue("tenant"), r.PathValue("key"), pub, b.Approver)
}

func (s *Server) handleDeleteKey(t fsm.MsgType) func(http.ResponseWriter, *http.Request) *apiError {
	return func(w http.ResponseWriter, r *http.Request) *apiError {
		return s.adminApply(r.Context(), t, fsm.DeleteKey{Tenant: r.PathValue("tenant"), KeyID: r.PathValue("key")})
	}
}

func (s *Server) handlePutTool(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := readBody(w, r, 1<<20)
	if aerr != nil {
		return aerr
	}
	return s.PutTool(r.Context(), body)
}

func (s *Server) handlePutPolicy(w http.ResponseWriter, r *http.Request) *apiError {
	body, aerr := readBody(w, r, policy.MaxTextBytes)
	if aerr != nil {
		return aerr
	}
	return s.PutPolicy(r.Context(), body)
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
func (s *Server) PutTenant(ctx context.Context, tenant string, runBudget int64) *apiError {
	if !validID(tenant) || runBudget < 0 {
		return refusal(protocol.CodeMalformed, "tenant must be an id and run_budget not negative")
	}
	return s.adminApply(ctx, fsm.MsgPutTenant, fsm.PutTenant{Tenant: tenant, RunBudget: runBudget})
}

// PutIntentKey registers an orchestrator HMAC secret, sealed before it is
// proposed.
func (s *Server) PutIntentKey(ctx context.Context, tenant, keyID string, secret []byte) *apiError {
	if !validID(tenant) || !validID(keyID) || len(secret) < 32 {
		return refusal(protocol.CodeMalformed, "tenant and key id must be ids, the secret at least 32 bytes")
	}
	return s.adminApply(ctx, fsm.MsgPutIntentKey, fsm.PutIntentKey{Tenant: tenant, KeyID: keyID, Sealed: s.keys.Seal(secret, sealContext(tenant, keyID))})
}

// PutApproverKey registers an approver's Ed25519 public key and identity.
func (s *Server) PutApproverKey(ctx context.Context, tenant, keyID string, pub []byte, approver string) *apiError {
	if !validID(tenant) || !validID(keyID) || len(pub) != ed25519.PublicKeySize || approver == "" {
		return refusal(protocol.CodeMalformed, "tenant and key id must be ids, the key 32 bytes, the approver named")
	}
	return s.adminApply(ctx, fsm.MsgPutApproverKey, fsm.PutApproverKey{Tenant: tenant, KeyID: keyID, Public: pub, Approver: approver})
}

// PutTool registers a tool (controlplane/internal/tools.Spec as JSON).
func (s *Server) PutTool(ctx context.Context, spec []byte) *apiError {
	t, err := tools.Parse(spec)
	if err != nil {
		return refusal(protocol.CodeMalformed, err.Error())
	}
	canon, err := protocol.Canonicalize(mustMarshal(t.Spec))
	if err != nil {
		return fromProtocol(err)
	}
	return s.adminApply(ctx, fsm.MsgPutTool, fsm.PutTool{
		Name: t.Name, Hash: t.Hash, Spec: canon, Tier: t.Tier, TimeoutMS: t.TimeoutMS, Selector: t.NodeSelector,
	})
}

// PutPolicy installs a Cedar policy set, refused unless it parses.
func (s *Server) PutPolicy(ctx context.Context, text []byte) *apiError {
	set, err := policy.Parse(text)
	if err != nil {
		return refusal(protocol.CodeMalformed, err.Error())
	}
	return s.adminApply(ctx, fsm.MsgPutPolicy, fsm.PutPolicy{Text: string(text), Hash: set.Hash(), At: s.now()})
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
