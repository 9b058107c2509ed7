package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/writhq/writ/protocol"
)

func (d *Dashboard) handleSignInPage(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := d.session(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	d.render(w, http.StatusOK, "signin", view{Title: "Sign in", Data: r.URL.Query().Get("next")})
}

// handleSignIn opens a session for a token. It is refused from another
// origin; the token itself is the credential, so no CSRF token exists yet.
func (d *Dashboard) handleSignIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	next := safeNext(r.PostFormValue("next"))
	fail := func(status int, msg string) {
		d.render(w, status, "signin", view{Title: "Sign in", Error: msg, Data: next})
	}
	if !sameOrigin(r) {
		fail(http.StatusForbidden, "Sign-in is accepted only from this dashboard's own page.")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		fail(http.StatusBadRequest, "Enter the token an admin gave you.")
		return
	}
	secret, p, err := d.cfg.Backend.SignIn(r.Context(), token, d.cfg.SessionTTL)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == string(protocol.CodeUnauthorized) {
			fail(http.StatusUnauthorized, "That token is not valid: it may have expired or been revoked.")
			return
		}
		if errors.As(err, &e) && e.Code == "too_many_sessions" {
			fail(http.StatusServiceUnavailable, "The dashboard has as many sessions open as it keeps; an admin can list and end sessions (writ session list, writ session revoke).")
			return
		}
		d.log.Warn("dashboard: sign-in", "err", err)
		fail(http.StatusServiceUnavailable, "Signing in failed on the server; try again.")
		return
	}
	d.setSession(w, secret, p.ExpiresAt)
	d.log.Info("dashboard: signed in", "user", p.User, "role", p.Role)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (d *Dashboard) handleSignOut(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	secret, _, ok := d.session(r)
	if ok {
		if !checkCSRF(r, secret) {
			writeError(w, protocol.CodeCSRF, "the request lacks this session's CSRF token or comes from another origin")
			return
		}
		if err := d.cfg.Backend.SignOut(r.Context(), secret); err != nil {
			d.log.Warn("dashboard: sign-out", "err", err)
		}
	}
	d.setSession(w, "", time.Time{})
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

// handleNodeAction drains, undrains or revokes a node, for a principal
// policy lets manage the fleet.
func (d *Dashboard) handleNodeAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	secret, p, ok := d.session(r)
	if !ok {
		writeError(w, protocol.CodeUnauthorized, "sign in first")
		return
	}
	if !checkCSRF(r, secret) {
		writeError(w, protocol.CodeCSRF, "the request lacks this session's CSRF token or comes from another origin")
		return
	}
	if d.fleet == nil || !d.cfg.Backend.Allowed(p, "manage", "fleet", "", "") {
		writeError(w, protocol.CodeForbidden, "your role may not manage nodes")
		return
	}
	action := r.PathValue("action")
	if action != "drain" && action != "ready" && action != "revoke" {
		writeError(w, protocol.CodeNotFound, "action must be drain, ready or revoke")
		return
	}
	id := r.PathValue("id")
	if err := d.fleet.SetNodeStatus(WithPrincipal(r.Context(), p), id, action); err != nil {
		var e *Error
		if errors.As(err, &e) {
			writeJSONError(w, e.Status, e.Code, e.Message)
			return
		}
		writeError(w, protocol.CodeInternal, "the change was not made")
		return
	}
	d.log.Info("dashboard: node "+action, "node", id, "user", p.User)
	http.Redirect(w, r, "/ui/fleet/"+id, http.StatusSeeOther)
}

// safeNext keeps redirects after sign-in on the dashboard.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}
