package controlplane

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// A dashboard token is "wu1.<id>.<secret>": the user's id and 32 random
// bytes (base64url). The control plane keeps only the secret's hash; the
// token is shown once, when it is created.
const userTokenPrefix = "wu1"

func (ep adminAPI) handleCreateToken(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	var req protocol.TokenRequest
	if aerr := decodeAdmin(w, r, &req); aerr != nil {
		return nil, aerr
	}
	ttl := time.Duration(req.TTLSeconds) * time.Second
	if ttl == 0 {
		ttl = 30 * 24 * time.Hour
	}
	switch {
	case ttl < time.Minute || ttl > 366*24*time.Hour:
		return nil, refusal(protocol.CodeMalformed, "ttl must be between 1 minute and a year")
	case req.Role != fsm.RoleViewer && req.Role != fsm.RoleApprover && req.Role != fsm.RoleAdmin && req.Role != fsm.RoleAuditor:
		return nil, refusal(protocol.CodeMalformed, "role must be viewer, approver, admin or auditor (join tokens for nodes: POST /v1/admin/join-tokens)")
	case req.Outputs && req.Role != fsm.RoleAuditor:
		return nil, refusal(protocol.CodeMalformed, "only an auditor token is granted outputs")
	case req.Role == fsm.RoleApprover && (!validID(req.Tenant) || req.Approver == "" || len(req.Approver) > protocol.MaxIDLen):
		return nil, refusal(protocol.CodeMalformed, "an approver token names its tenant and approver identity")
	case req.Tenant != "" && !validID(req.Tenant):
		return nil, refusal(protocol.CodeMalformed, "tenant must be an id")
	case req.Role != fsm.RoleApprover && req.Approver != "":
		return nil, refusal(protocol.CodeMalformed, "only an approver token names an approver")
	}
	id, secret := make([]byte, 8), make([]byte, 32)
	rand.Read(id)
	rand.Read(secret)
	now := ep.srv.now()
	u := fsm.PutUser{ID: hex.EncodeToString(id), Hash: protocol.HashBytes(secret), Role: req.Role, Tenant: req.Tenant,
		Approver: req.Approver, Outputs: req.Outputs, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	res, err := ep.srv.applyAdminChange(r.Context(), fsm.MsgPutUser, u)
	if err != nil {
		return nil, raftError(err)
	}
	if res.Err != nil {
		return nil, refusal(res.Err.Code, res.Err.Message)
	}
	return protocol.TokenResponse{Token: userTokenPrefix + "." + u.ID + "." + base64.RawURLEncoding.EncodeToString(secret), ID: u.ID,
		Role: u.Role, Tenant: u.Tenant, Approver: u.Approver, Outputs: u.Outputs, ExpiresAt: protocol.FormatTime(u.ExpiresAt)}, nil
}

func (ep adminAPI) handleDeleteToken(w http.ResponseWriter, r *http.Request) *apiError {
	res, err := ep.srv.applyAdminChange(r.Context(), fsm.MsgDeleteUser, fsm.DeleteUser{ID: r.PathValue("id")})
	if err != nil {
		return raftError(err)
	}
	if res.Err != nil {
		return refusal(res.Err.Code, res.Err.Message)
	}
	return nil
}

// parseUserToken splits a dashboard token into its id and secret.
func parseUserToken(token string) (string, []byte, bool) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 || parts[0] != userTokenPrefix || !validID(parts[1]) {
		return "", nil, false
	}
	secret, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(secret) != 32 {
		return "", nil, false
	}
	return parts[1], secret, true
}
