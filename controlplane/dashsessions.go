package controlplane

import (
	"net/http"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// The admin API of dashboard sessions and of the tokens issued: what an
// admin needs to see who can sign in and who is signed in, and to end a
// session. Nothing listed is a credential: tokens and sessions are kept by
// hashes, and those are not listed either.
func (s *Server) sessionRoutes(mux *routeMux) {
	mux.HandleFunc("GET /v1/admin/tokens", s.adminJSON(s.handleListTokens))
	mux.HandleFunc("GET /v1/admin/sessions", s.adminJSON(s.handleListSessions))
	mux.HandleFunc("DELETE /v1/admin/sessions/{id}", s.admin(s.handleRevokeSession))
}

func (s *Server) handleListTokens(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	now := s.now()
	open := map[string]int{}
	for _, ss := range s.fsm.Sessions() {
		if ss.ExpiresAt.After(now) {
			open[ss.User]++
		}
	}
	out := []protocol.TokenInfo{}
	for _, u := range s.fsm.Users() {
		if !u.ExpiresAt.After(now) {
			continue
		}
		out = append(out, protocol.TokenInfo{ID: u.ID, Role: u.Role, Tenant: u.Tenant, Approver: u.Approver,
			CreatedAt: protocol.FormatTime(u.CreatedAt), ExpiresAt: protocol.FormatTime(u.ExpiresAt), Sessions: open[u.ID]})
	}
	for _, t := range s.fsm.JoinTokens() {
		if t.ExpiresAt.After(now) {
			out = append(out, protocol.TokenInfo{ID: t.ID, Role: "node", Labels: t.Labels, ExpiresAt: protocol.FormatTime(t.ExpiresAt)})
		}
	}
	return map[string]any{"tokens": out}, nil
}

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	now := s.now()
	out := []protocol.SessionInfo{}
	for _, ss := range s.fsm.Sessions() {
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
	return map[string]any{"sessions": out, "max_per_user": s.cfg.MaxSessionsPerUser, "max": fsm.MaxSessions}, nil
}

// handleRevokeSession closes a session by its id: the browser holding it
// is signed out at its next request.
func (s *Server) handleRevokeSession(w http.ResponseWriter, r *http.Request) *apiError {
	hash, ok := s.fsm.SessionHash(r.PathValue("id"))
	if !ok {
		return refusal(protocol.CodeNotFound, "no session "+r.PathValue("id"))
	}
	return s.adminApply(r.Context(), fsm.MsgCloseSession, fsm.CloseSession{Hash: hash})
}
