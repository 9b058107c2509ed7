package controlplane

import (
	"net/http"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

func (ep adminAPI) handleListTokens(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	now := ep.srv.now()
	open := map[string]int{}
	for _, ss := range ep.srv.reads.Sessions() {
		if ss.ExpiresAt.After(now) {
			open[ss.User]++
		}
	}
	out := []protocol.TokenInfo{}
	for _, u := range ep.srv.reads.Users() {
		if !u.ExpiresAt.After(now) {
			continue
		}
		out = append(out, protocol.TokenInfo{ID: u.ID, Role: u.Role, Tenant: u.Tenant, Approver: u.Approver,
			CreatedAt: protocol.FormatTime(u.CreatedAt), ExpiresAt: protocol.FormatTime(u.ExpiresAt), Sessions: open[u.ID]})
	}
	for _, t := range ep.srv.reads.JoinTokens() {
		if t.ExpiresAt.After(now) {
			out = append(out, protocol.TokenInfo{ID: t.ID, Role: "node", Labels: t.Labels, ExpiresAt: protocol.FormatTime(t.ExpiresAt)})
		}
	}
	return map[string]any{"tokens": out}, nil
}

func (ep adminAPI) handleListSessions(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	now := ep.srv.now()
	out := []protocol.SessionInfo{}
	for _, ss := range ep.srv.reads.Sessions() {
		if !ss.ExpiresAt.After(now) {
			continue
		}
		si := protocol.SessionInfo{ID: ss.ID, User: ss.User, Role: ss.Role, Tenant: ss.Tenant, Approver: ss.Approver,
			ExpiresAt: protocol.FormatTime(ss.ExpiresAt)}
		if !ss.OpenedAt.IsZero() {
			si.OpenedAt = protocol.FormatTime(ss.OpenedAt)
		}
		out = append(out, si)
	}
	return map[string]any{"sessions": out, "max_per_user": ep.srv.cfg.MaxSessionsPerUser, "max": fsm.MaxSessions}, nil
}

// handleRevokeSession closes a session by its id: the browser holding it
// is signed out at its next request.
func (ep adminAPI) handleRevokeSession(w http.ResponseWriter, r *http.Request) *apiError {
	hash, ok := ep.srv.reads.SessionHash(r.PathValue("id"))
	if !ok {
		return refusal(protocol.CodeNotFound, "no session "+r.PathValue("id"))
	}
	return ep.srv.adminApply(r.Context(), fsm.MsgCloseSession, fsm.CloseSession{Hash: hash})
}
