package controlplane

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/writhq/writ/internal/buildinfo"
	"github.com/writhq/writ/protocol"
)

// catchUpWait bounds how long a readiness check or a lookup that found
// nothing waits for this server's FSM to apply what Raft has committed.
const catchUpWait = 2 * time.Second

// readiness is what /v1/health adds to "a leader is known and this server's
// state is caught up": a check its embedder sets once everything it needs is
// in place (writ dev: the dev keys committed and the dev agent connected;
// see DevConfig.ReadyLater).
type readiness struct {
	check atomic.Pointer[func() error]
}

// SetReadyCheck makes /v1/health answer 200 only while check returns nil
// (on top of a known leader and a caught-up state).
func (s *Server) SetReadyCheck(check func() error) { s.ready.check.Store(&check) }

// caughtUp reports whether this server's FSM has applied everything Raft had
// committed when it was asked, waiting up to catchUpWait for it.
func (s *Server) caughtUp(ctx context.Context) bool {
	commit := s.node.Raft.CommitIndex()
	if s.reads.Index() >= commit {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	return s.reads.WaitIndex(ctx, commit)
}

// unready says why this server would not admit a valid intent now, or "".
func (s *Server) unready(ctx context.Context) string {
	if _, leader := s.node.Raft.LeaderWithID(); leader == "" {
		return "no leader is known"
	}
	if s.diskFull() {
		return "this server's disk is full"
	}
	if !s.caughtUp(ctx) {
		return "this server is still applying the committed log"
	}
	check := s.ready.check.Load()
	if check == nil {
		return ""
	}
	if err := (*check)(); err != nil {
		return err.Error()
	}
	return ""
}

// statusAPI is the status area of the API, open to anyone: health, the
// build, and the Prometheus metrics.
type statusAPI struct{ srv *Server }

// routes registers the status area.
func (ep statusAPI) routes(mux *routeMux) {
	mux.HandleFunc("GET /v1/health", ep.handleHealth)
	mux.HandleFunc("GET /v1/version", ep.handleVersion)
	mux.Handle("GET /metrics", promhttp.HandlerFor(ep.srv.metrics.reg, promhttp.HandlerOpts{}))
}

// handleHealth answers 200 when this server would admit a valid intent, and
// 503 with the reason and Retry-After otherwise.
func (ep statusAPI) handleHealth(w http.ResponseWriter, r *http.Request) {
	_, leader := ep.srv.node.Raft.LeaderWithID()
	h := map[string]any{"status": "ok", "server": ep.srv.cfg.ID, "leader": string(leader), "raft_index": ep.srv.reads.Index()}
	if ep.srv.cluster != nil {
		h["peers"] = ep.srv.cluster.health()
	}
	if reason := ep.srv.unready(r.Context()); reason != "" {
		h["status"], h["reason"] = "unavailable", reason
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// lagging is the answer to a request whose key or tool this server did not
// find while its state was behind the committed log: 503, never a 4xx that
// would tell a correct client its key is wrong.
func lagging() *apiError {
	return refusal(protocol.CodeNoLeader, "this server has not caught up with the committed log yet; retry")
}

// handleVersion answers which build this server runs (internal/buildinfo).
func (ep statusAPI) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, buildinfo.Get())
}
