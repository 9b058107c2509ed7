package controlplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/pki"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// Headers between servers. A forwarded request names the original client's
// source, which the leader believes only from a peer presenting a server
// certificate of the cluster CA; the leader's answer carries its applied index.
const (
	headerForwardedFor = "Writ-Forwarded-For"
	headerIndex        = "Writ-Index"
)

// forwarding sends writes that reach a follower to the leader, over mutual
// TLS, and returns the leader's answer. Reads are served locally.
func (s *Server) forwarding(next http.Handler) http.Handler {
	if s.cluster == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Internal endpoints are served where they are asked, never
		// forwarded: a follower forwards with its own server certificate,
		// which would let anyone reach them through it.
		if !isWrite(r.Method) || internalPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		peer := fromServer(r) && r.Header.Get(headerForwardedFor) != ""
		switch {
		case s.isLeader() && peer:
			next.ServeHTTP(&indexWriter{ResponseWriter: w, s: s}, r)
		case s.isLeader():
			next.ServeHTTP(w, r)
		case peer:
			// Forwarded once already: never again, so no request loops
			// while servers disagree about who leads.
			writeError(w, protocol.CodeNoLeader, "this server is not the leader either; retry")
		default:
			s.forward(w, r)
		}
	})
}

// internalPath reports whether p, cleaned as the router cleans it, is one of
// the endpoints between servers (/v1/internal/…).
func internalPath(p string) bool {
	return strings.HasPrefix(path.Clean("/"+p)+"/", "/v1/internal/")
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// fromServer reports whether the request came over TLS from a client
// certificate of the cluster CA naming a server.
func fromServer(r *http.Request) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return false
	}
	role, _, err := pki.Identity(r.TLS.VerifiedChains[0][0])
	return err == nil && role == pki.RoleServer
}

// indexWriter adds the leader's applied index to its answer to a forward.
type indexWriter struct {
	http.ResponseWriter
	s *Server
}

func (iw *indexWriter) WriteHeader(code int) {
	iw.Header().Set(headerIndex, strconv.FormatUint(iw.s.reads.Index(), 10))
	iw.ResponseWriter.WriteHeader(code)
}

func (iw *indexWriter) Write(b []byte) (int, error) {
	if iw.Header().Get(headerIndex) == "" {
		iw.WriteHeader(http.StatusOK)
	}
	return iw.ResponseWriter.Write(b)
}

// forward relays one write to the leader. A submission with ?wait= is sent
// without it; once this server's FSM has applied what the leader answered,
// the wait is served here from its own notifications.
func (s *Server) forward(w http.ResponseWriter, r *http.Request) {
	_, leader := s.node.Raft.LeaderWithID()
	m, ok := s.cluster.g.member(string(leader))
	if leader == "" || !ok {
		writeError(w, protocol.CodeNoLeader, "no leader is known yet; retry")
		return
	}
	var wait time.Duration
	q := r.URL.Query()
	submit := r.Method == http.MethodPost && r.URL.Path == "/v1/intents"
	if submit && s.backlogFull(w) {
		return // refused here, as the leader would, without a forward
	}
	if submit {
		var aerr *apiError
		if wait, aerr = s.waitFor(r); aerr != nil {
			writeError(w, aerr.code, aerr.msg)
			return
		}
		q.Del("wait")
	}
	body, aerr := readBody(w, r, s.forwardLimit())
	if aerr != nil {
		s.refuse(w, r, aerr)
		return
	}
	status, header, out, idx, done := s.forwardSubmitBatched(r, submit, body)
	if done {
		return
	}
	if header == nil {
		var ok bool
		// The query as sent, unless the submission's wait was taken out: a
		// signed cancel's signature covers its target byte for byte.
		query := r.URL.RawQuery
		if submit {
			query = q.Encode()
		}
		if status, header, out, idx, ok = s.forwardAlone(w, r, m.API, query, body); !ok {
			return
		}
	}
	if s.countForwardedFailure(w, r, status, out) {
		return
	}
	if submit && wait > 0 && status == http.StatusOK {
		var ir struct {
			ID string `json:"intent_id"`
		}
		deadline := time.Now().Add(wait)
		wctx, wcancel := context.WithDeadline(r.Context(), deadline)
		wctx, cut := s.waitWhileSpace(wctx, wait)
		caught := idx > 0 && jsonx.UnmarshalLenient(out, &ir) == nil && ir.ID != "" && s.reads.WaitIndex(wctx, idx)
		cut()
		wcancel()
		if caught {
			s.answer(w, r, ir.ID, time.Until(deadline))
			return
		}
		if s.diskFull() {
			// Admitted by the leader, but this server cannot catch up to
			// answer: the client sends it again elsewhere (the intent's
			// key makes that safe).
			writeError(w, protocol.CodeNoLeader, diskFullMessage+" (the intent may have been admitted; sending it again is safe)")
			return
		}
	}
	for _, k := range []string{"Content-Type", "Retry-After", "Cache-Control"} {
		if v := header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(status)
	w.Write(out)
}

// forwardSubmitBatched sends a submission to the leader in the follower's
// next batch (forwardbatch.go). It returns no header, and done false, for a
// request that is not a submission or a leader that takes no batches: the
// caller forwards it alone. done is true when the client went away.
func (s *Server) forwardSubmitBatched(r *http.Request, submit bool, body []byte) (status int, header http.Header, out []byte, idx uint64, done bool) {
	if !submit || s.cluster.batches == nil {
		return 0, nil, nil, 0, false
	}
	a, idx, err := s.cluster.batches.forward(r.Context(), batchItem{Source: source(r), Body: body})
	switch {
	case errors.Is(err, errNoBatches):
		return 0, nil, nil, 0, false
	case errors.Is(err, errQueueFull):
		s.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Inc()
		a = recorded(func(w http.ResponseWriter) {
			writeOverloaded(w, "too many submissions wait to be forwarded to the leader; retry")
		})
	case err != nil && r.Context().Err() != nil:
		return 0, nil, nil, 0, true // the client is gone
	case err != nil:
		a = recorded(func(w http.ResponseWriter) {
			writeError(w, protocol.CodeNoLeader, "the batch to the leader got no answer; the intent may or may not have been admitted; retry (intents are idempotent by their key)")
		})
	}
	header = http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	if a.RetryAfter > 0 {
		header.Set("Retry-After", strconv.Itoa(a.RetryAfter))
	}
	return a.Status, header, a.Body, idx, false
}

// forwardAlone relays one write to the leader at api in a request of its own.
// It has answered the client itself when ok is false.
func (s *Server) forwardAlone(w http.ResponseWriter, r *http.Request, api, query string, body []byte) (status int, header http.Header, out []byte, idx uint64, ok bool) {
	// The path as the client escaped it: the leader decodes it once, as this
	// server did. (A decoded path would be decoded twice: /v1/%2569nternal/…
	// would reach the leader as an internal path.)
	u := "https://" + api + r.URL.EscapedPath()
	if query != "" {
		u += "?" + query
	}
	// A write that waits at the leader (a cancel with ?wait=, whose signed
	// target keeps it) gets its wait on top of the forward's own time.
	timeout := 30 * time.Second
	if q, err := url.ParseQuery(query); err == nil && q.Get("wait") != "" {
		timeout += s.cfg.MaxWait
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var trace sendTrace
	req, err := http.NewRequestWithContext(trace.context(ctx), r.Method, u, bytes.NewReader(body))
	if err != nil {
		writeError(w, protocol.CodeInternal, "cannot forward")
		return 0, nil, nil, 0, false
	}
	for k, vs := range r.Header {
		if k == "Authorization" || k == "Content-Type" || strings.HasPrefix(k, "Writ-") {
			req.Header[k] = vs
		}
	}
	req.Header.Set(headerForwardedFor, source(r))
	resp, err := s.cluster.http.Do(req)
	if trace.shed(err) {
		s.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Inc()
		writeOverloaded(w, "the leader is at capacity: it closed the connection before the request was sent; retry")
		return 0, nil, nil, 0, false
	}
	if err != nil {
		s.log.Warn("forwarding to the leader", "api", api, "err", err)
		writeError(w, protocol.CodeNoLeader, "the leader did not answer; the write may or may not have been applied; retry (intents are idempotent by their key)")
		return 0, nil, nil, 0, false
	}
	defer resp.Body.Close()
	out, err = io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		writeError(w, protocol.CodeNoLeader, "the leader's answer was cut off; the write may or may not have been applied")
		return 0, nil, nil, 0, false
	}
	idx, _ = strconv.ParseUint(resp.Header.Get(headerIndex), 10, 64)
	return resp.StatusCode, resp.Header, out, idx, true
}

// countForwardedFailure counts, here too, a forwarded request that failed
// authentication, and holds the answer to a source past its budget as the
// leader would have (limitFailure); it reports whether it answered.
func (s *Server) countForwardedFailure(w http.ResponseWriter, r *http.Request, status int, body []byte) bool {
	if status != http.StatusBadRequest && status != http.StatusUnauthorized {
		return false
	}
	var e protocol.ErrorResponse
	if jsonx.UnmarshalLenient(body, &e) != nil || !authFailure(e.Error.Code) {
		return false
	}
	return s.auth().limitFailure(w, r)
}

// forwardLimit is the largest body any write takes.
func (s *Server) forwardLimit() int {
	return max(2*s.verifier.Config().MaxBytes+1024, 1<<20)
}
