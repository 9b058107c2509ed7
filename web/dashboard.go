package web

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/writhq/writ/protocol"
)

// Dashboard serves the pages under /ui/ and the event stream /v1/events.
type Dashboard struct {
	cfg   Config
	log   *slog.Logger
	fleet Fleet // nil when the backend has no fleet
	admin Admin // nil when the backend keeps no admin record
	hub   *hub
	pages *pages
	mux   *http.ServeMux
	// patterns are the routes registered on mux, in order.
	patterns []string
}

// New returns a dashboard over cfg.Backend. Close stops its event hub.
func New(cfg Config) (*Dashboard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, pages: pg}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.fleet, _ = cfg.Backend.(Fleet)
	d.admin, _ = cfg.Backend.(Admin)
	d.hub = newHub(cfg.Backend, cfg.EventBuffer, cfg.SendQueue, cfg.Changes, cfg.IdleAfter)
	d.mux = http.NewServeMux()
	d.routes()
	return d, nil
}

// Changed tells the dashboard what the control plane just changed, at Raft
// index; reset says anything may have changed (a snapshot was restored). It
// never blocks: it may be called from the goroutine that applies the log.
func (d *Dashboard) Changed(index uint64, changes []Change, reset bool) {
	d.hub.changed(index, changes, reset)
}

// Close ends every event stream and stops the hub.
func (d *Dashboard) Close() { d.hub.stop() }

// ServeHTTP serves /ui/ and its assets.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// Events is the handler of GET /v1/events.
func (d *Dashboard) Events() http.Handler { return http.HandlerFunc(d.serveEvents) }

// Routes returns the patterns the dashboard serves under /ui/, in order:
// the control plane's access matrix names each one.
func (d *Dashboard) Routes() []string { return append([]string(nil), d.patterns...) }

// handle registers a route and records its pattern.
func (d *Dashboard) handle(pattern string, h http.Handler) {
	d.patterns = append(d.patterns, pattern)
	d.mux.Handle(pattern, h)
}

func (d *Dashboard) routes() {
	mux := routeRecorder{d}
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/signin", d.handleSignInPage)
	mux.HandleFunc("POST /ui/signin", d.handleSignIn)
	mux.HandleFunc("POST /ui/signout", d.handleSignOut)
	mux.HandleFunc("GET /ui/{$}", d.page(pageOverview))
	mux.HandleFunc("GET /ui/fleet", d.page(pageFleet))
	mux.HandleFunc("GET /ui/fleet/{id}", d.page(pageNode))
	mux.HandleFunc("POST /ui/fleet/{id}/{action}", d.handleNodeAction)
	mux.HandleFunc("GET /ui/approvals", d.page(pageApprovals))
	mux.HandleFunc("GET /ui/intents", d.page(pageIntents))
	mux.HandleFunc("GET /ui/intents/{id}", d.page(pageIntent))
	mux.HandleFunc("GET /ui/ledger", d.page(pageLedger))
	mux.HandleFunc("GET /ui/audit", d.page(pageAudit))
	mux.HandleFunc("POST /ui/locks", d.handleCreateLock)
	mux.HandleFunc("POST /ui/locks/{id}/delete", d.handleDeleteLock)
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, protocol.CodeNotFound, "no such page")
	})
}

// routeRecorder lets routes read as ServeMux registrations.
type routeRecorder struct{ d *Dashboard }

func (m routeRecorder) Handle(pattern string, h http.Handler) { m.d.handle(pattern, h) }
func (m routeRecorder) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.d.handle(pattern, http.HandlerFunc(h))
}

// cacheStatic lets browsers keep assets briefly; they change with the binary.
func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

// GuardApproval wraps POST /v1/approvals. A request carrying the session
// cookie comes from the dashboard and must carry the CSRF token, belong to
// an approver, and be an approval by that approver's own identity of an
// intent of its tenant that policy lets it decide, never its own intent.
// Requests without the cookie are the API's, authorized by the approval's
// signature alone, and pass unchanged.
func (d *Dashboard) GuardApproval(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.hasSessionCookie(r) {
			next.ServeHTTP(w, r)
			return
		}
		secret, p, ok := d.session(r)
		if !ok {
			writeError(w, protocol.CodeUnauthorized, "the session has ended; sign in again")
			return
		}
		if !checkCSRF(r, secret) {
			writeError(w, protocol.CodeCSRF, "the request lacks this session's CSRF token or comes from another origin")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			writeError(w, protocol.CodeMalformed, "body is unreadable or over the size limit")
			return
		}
		a, err := protocol.DecodeApproval(body, 64<<10)
		if err != nil {
			writeError(w, protocol.CodeMalformed, "not an approval artifact")
			return
		}
		in, found := d.cfg.Backend.Intent(a.IntentID)
		switch {
		case p.Role != "approver" || a.Approver != p.Approver || a.Tenant != p.Tenant:
			writeError(w, protocol.CodeApprovalForbidden, "this session may not decide as "+a.Approver)
			return
		case !found || in.Tenant != p.Tenant:
			writeError(w, protocol.CodeNotFound, "no intent "+a.IntentID)
			return
		case !d.cfg.Backend.Allowed(p, "decide", "approvals", in.Tenant, in.Principal):
			writeError(w, protocol.CodeApprovalForbidden, "policy does not let this session decide on this intent")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// writeError answers code with its HTTP status (protocol.HTTPStatus).
func writeError(w http.ResponseWriter, code protocol.Code, msg string) {
	writeJSONError(w, protocol.HTTPStatus(code), string(code), msg)
}

// writeJSONError answers a status and code as they are, such as a control
// plane's refusal passed on.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: protocol.Code(code), Message: msg}})
}
