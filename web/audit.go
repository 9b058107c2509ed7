package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/writhq/writ/protocol"
)

const pageAudit = "audit"

// auditPageSize is how many admin entries one page of the audit view shows.
const auditPageSize = 50

// auditPage shows the locks in force, with the form that makes one, and the
// admin record, newest first: to a principal policy lets manage the audit
// page (an admin).
func (d *Dashboard) auditPage(r *http.Request, p Principal, v *view) (int, string) {
	if !v.Can["audit"] {
		return http.StatusForbidden, forbidden
	}
	var before uint64
	if s := r.URL.Query().Get("before"); s != "" {
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return http.StatusBadRequest, "before is a ledger index"
		}
		before = n
	}
	entries := d.admin.AdminEntries(before, auditPageSize+1)
	next := ""
	if len(entries) > auditPageSize {
		entries = entries[:auditPageSize]
		next = "/ui/audit?before=" + strconv.FormatUint(entries[len(entries)-1].Index, 10)
	}
	v.Title, v.Data = "Audit", struct {
		Locks   []Lock
		Entries []AdminEntry
		Next    string
		First   bool
	}{d.admin.Locks(), entries, next, before == 0}
	return http.StatusOK, ""
}

// handleCreateLock makes a lock from the audit page's form.
func (d *Dashboard) handleCreateLock(w http.ResponseWriter, r *http.Request) {
	p, ok := d.auditAction(w, r)
	if !ok {
		return
	}
	req := LockRequest{Tenant: strings.TrimSpace(r.PostFormValue("tenant")), Principal: strings.TrimSpace(r.PostFormValue("principal")),
		Tool: strings.TrimSpace(r.PostFormValue("tool")), Node: strings.TrimSpace(r.PostFormValue("node")),
		Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	if ttl := strings.TrimSpace(r.PostFormValue("ttl")); ttl != "" {
		dur, err := time.ParseDuration(ttl)
		if err != nil || dur < 0 {
			writeError(w, protocol.CodeMalformed, "the TTL is a duration such as 30m or 2h, or empty for none")
			return
		}
		req.TTL = dur
	}
	l, err := d.admin.CreateLock(WithPrincipal(r.Context(), p), req)
	if err != nil {
		d.actionError(w, err)
		return
	}
	d.log.Warn("dashboard: lock created", "lock", l.ID, "user", p.User)
	http.Redirect(w, r, "/ui/audit", http.StatusSeeOther)
}

// handleDeleteLock removes a lock from the audit page.
func (d *Dashboard) handleDeleteLock(w http.ResponseWriter, r *http.Request) {
	p, ok := d.auditAction(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := d.admin.DeleteLock(WithPrincipal(r.Context(), p), id); err != nil {
		d.actionError(w, err)
		return
	}
	d.log.Warn("dashboard: lock deleted", "lock", id, "user", p.User)
	http.Redirect(w, r, "/ui/audit", http.StatusSeeOther)
}

// auditAction checks a change asked from the audit page: a session, its
// CSRF token, and a principal policy lets manage the audit page.
func (d *Dashboard) auditAction(w http.ResponseWriter, r *http.Request) (Principal, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	secret, p, ok := d.session(r)
	if !ok {
		writeError(w, protocol.CodeUnauthorized, "sign in first")
		return p, false
	}
	if !checkCSRF(r, secret) {
		writeError(w, protocol.CodeCSRF, "the request lacks this session's CSRF token or comes from another origin")
		return p, false
	}
	if d.admin == nil || !d.cfg.Backend.Allowed(p, "manage", "audit", "", "") {
		writeError(w, protocol.CodeForbidden, "your role may not manage locks")
		return p, false
	}
	return p, true
}

// actionError answers a change the backend refused.
func (d *Dashboard) actionError(w http.ResponseWriter, err error) {
	var e *Error
	if errors.As(err, &e) {
		writeJSONError(w, e.Status, e.Code, e.Message)
		return
	}
	writeError(w, protocol.CodeInternal, "the change was not made")
}

// auditLink is the ledger page that proves an admin entry in the browser.
func auditLink(index uint64) string {
	return "/ui/ledger?" + url.Values{"index": {strconv.FormatUint(index, 10)}}.Encode()
}
