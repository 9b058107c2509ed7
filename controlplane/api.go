package controlplane

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// routes builds the API: each area's endpoint type registers its own routes
// (the list of areas is in docs/development.md, "Where a change goes"), and
// what is left unmatched is not_found. In front of them all: the submission
// timer, the dashboard's pages, and forwarding to the leader.
func (s *Server) routes() http.Handler {
	mux := newRouteMux()
	s.mux = mux
	intentsAPI{s}.routes(mux)
	approvalsAPI{s}.routes(mux)
	dashBackend{s}.routes(mux)
	statusAPI{s}.routes(mux)
	adminAPI{s}.routes(mux)
	ledgerAPI{s}.routes(mux)
	nodesAPI{s}.routes(mux)
	internalAPI{s}.routes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, protocol.CodeNotFound, "no such endpoint")
	})
	return s.timeSubmissions(dashBackend{s}.dashboardFront(s.refuseWhileFull(s.forwarding(mux.mux))))
}

// readBody reads at most limit bytes; a larger body is malformed. The buffer
// starts at the announced size, up to 64 KiB, and grows only with the bytes
// that arrive: announcing a large body costs a client nothing but what it
// sends.
func readBody(w http.ResponseWriter, r *http.Request, limit int) ([]byte, *apiError) {
	body := http.MaxBytesReader(w, r.Body, int64(limit))
	size := 512
	if n := r.ContentLength; n > 0 {
		size = int(min(n, 64<<10, int64(limit))) + 1 // + 1: room to read the end without growing
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, refusal(protocol.CodeMalformed, "body is unreadable or over the size limit")
		}
	}
}

// waitFor reads ?wait= (a Go duration, at most MaxWait).
func (s *Server) waitFor(r *http.Request) (time.Duration, *apiError) {
	q := r.URL.Query().Get("wait")
	if q == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(q)
	if err != nil || d < 0 {
		return 0, refusal(protocol.CodeMalformed, "wait must be a duration such as 30s")
	}
	return min(d, s.cfg.MaxWait), nil
}

type submitBody struct {
	Intent   jsontext.Value `json:"intent"`
	Approval jsontext.Value `json:"approval,omitzero"`
}

// enter admits a request to proposal, charged its cost (costOf with the
// body's limit): past MaxInFlight requests or MaxInFlightBytes of cost it is
// refused at once, before its body is read. Waiting for an outcome (?wait=)
// happens after leave, so long polls do not hold capacity.
func (s *Server) enter(w http.ResponseWriter, r *http.Request, limit int) (leave func(), ok bool) {
	cost := costOf(r, limit)
	if !s.gate.enter(cost) {
		s.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Inc()
		writeOverloaded(w, "the server is at capacity; retry")
		return nil, false
	}
	s.metrics.inFlight.Inc()
	return func() { s.metrics.inFlight.Dec(); s.gate.leave(cost) }, true
}

// backlogFull refuses a submission while MaxQueued intents wait in the queue
// for a node: 429 at once, before the body is read or verified. The count is
// the queue as of this server's last applied entry, so a follower refuses
// as the leader would, without forwarding.
func (s *Server) backlogFull(w http.ResponseWriter) bool {
	if s.cfg.MaxQueued <= 0 || s.reads.Queued() < s.cfg.MaxQueued {
		return false
	}
	s.metrics.refused.WithLabelValues(string(protocol.CodeOverloaded)).Inc()
	writeOverloaded(w, "too many intents wait for a node; retry")
	return true
}

// refuse answers a request refused without recording anything. A failed
// authentication is counted against its source, and past the source's budget
// answered overloaded instead (limitFailure).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, aerr *apiError) {
	if authFailure(aerr.code) && s.auth().limitFailure(w, r) {
		return
	}
	s.metrics.refused.WithLabelValues(string(aerr.code)).Inc()
	s.log.Info("request refused", "path", r.URL.Path, "code", aerr.code)
	writeError(w, aerr.code, aerr.msg)
}

func (ep intentsAPI) handleSubmit(w http.ResponseWriter, r *http.Request) {
	wait, aerr := ep.srv.waitFor(r)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	if ep.srv.backlogFull(w) {
		return
	}
	// Room for an intent and an approval, each at the protocol's limit.
	limit := 2*ep.srv.verifier.Config().MaxBytes + 1024
	leave, ok := ep.srv.enter(w, r, limit)
	if !ok {
		return
	}
	var sb submitBody
	id, aerr := func() (string, *apiError) {
		defer leave()
		body, aerr := readBody(w, r, limit)
		if aerr != nil {
			return "", aerr
		}
		// The envelope is as strict as what it carries: no duplicate or
		// unknown members, so that no two readers of one body see
		// different intents.
		if err := json.Unmarshal(body, &sb, json.RejectUnknownMembers(true)); err != nil || len(sb.Intent) == 0 {
			return "", refusal(protocol.CodeMalformed, `body must be {"intent": {…}, "approval": {…}?}`)
		}
		id, aerr := ep.admit(r.Context(), sb.Intent)
		if aerr != nil || len(sb.Approval) == 0 {
			return id, aerr
		}
		return id, approvalsAPI(ep).approveWith(r.Context(), id, sb.Approval)
	}()
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	if in, ok := ep.srv.reads.Intent(id); ok {
		code := ""
		if in.Error != nil {
			code = string(in.Error.Code)
		}
		ep.srv.metrics.admissions.WithLabelValues(in.State, code).Inc()
		// One line per admission with its decision: names and codes, never
		// params or output.
		ep.srv.log.Info("intent admitted", "intent_id", in.ID, "tenant", in.Tenant, "principal", in.Principal, "tool", in.Tool,
			"state", in.State, "allow", in.Decision.Allow, "approval_required", in.Decision.ApprovalRequired,
			"policies", in.Decision.Policies, "code", code)
	}
	ep.srv.answer(w, r, id, wait)
}

// answer writes an intent's response, waiting up to wait for a final state
// and then, unless ?proof=false, for a checkpoint that covers its receipt.
// It never carries the tool's output: see answerEntitled.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, wait time.Duration) {
	s.respond(w, r, id, wait, false)
}

// respond is answer, with the tool's output beside the result when
// withOutput is set (a reader entitled to the intent's tenant).
func (s *Server) respond(w http.ResponseWriter, r *http.Request, id string, wait time.Duration, withOutput bool) {
	ctx := r.Context()
	deadline := time.Now().Add(wait)
	waitCtx, cut := s.waitWhileSpace(ctx, wait)
	in, ok := s.wait(waitCtx, id, wait)
	if !ok {
		writeError(w, protocol.CodeNotFound, "no intent "+id)
		return
	}
	if cut() && !fsm.Final(in.State) {
		// The disk filled during the wait: this server cannot see the
		// intent end. What the request asked of it (a submission, a
		// cancel) may have been applied; both are safe to send again.
		writeError(w, protocol.CodeNoLeader, diskFullMessage+" (what was asked may have been applied; sending it again is safe)")
		return
	}
	resp := responseFor(in)
	if resp.Error != nil && resp.Error.Code == protocol.CodeNoEligibleNode {
		// The receipt keeps the FSM's message; the answer says, from the
		// fleet as it is now, why each ready node did not take it.
		if why := s.reads.Exclusions(in.ID); why != "" {
			e := *resp.Error
			e.Message += "; " + why
			resp.Error = &e
		}
	}
	if withOutput {
		intentsAPI{s}.attachOutput(&resp, in)
	}
	if in.Receipt != nil {
		proofWait := time.Until(deadline)
		if r.URL.Query().Get("proof") == "false" {
			proofWait = 0
		}
		ledgerAPI{s}.attachReceipt(ctx, &resp, *in.Receipt, proofWait, withOutput)
	}
	s.log.Debug("intent answered", "intent_id", in.ID, "state", in.State)
	writeJSON(w, http.StatusOK, resp)
}

// handleGetIntent answers a signed read by an orchestrator of the intent's
// tenant, or an admin. An intent of another tenant is not found, as one that
// does not exist is: a read learns nothing about other tenants.
func (ep intentsAPI) handleGetIntent(w http.ResponseWriter, r *http.Request) {
	tenant, all, aerr := ep.srv.auth().reader(r)
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	wait, aerr := ep.srv.waitFor(r)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	id := r.PathValue("id")
	if in, ok := ep.srv.reads.Intent(id); !ok || (!all && in.Tenant != tenant) {
		writeError(w, protocol.CodeNotFound, "no intent "+id)
		return
	}
	ep.answerEntitled(w, r, id, wait)
}

// reader authenticates a read: an admin token sees every tenant; a request
// signed with an orchestrator key (protocol.VerifyRead) sees its tenant.
func (au auth) reader(r *http.Request) (tenant string, all bool, aerr *apiError) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if !au.adminToken(token) {
			return "", false, refusal(protocol.CodeUnauthorized, "the token is not valid")
		}
		return "", true, nil
	}
	h := r.Header
	if h.Get(protocol.HeaderSignature) == "" {
		return "", false, refusal(protocol.CodeUnauthorized, "reads are signed with an orchestrator key ("+protocol.HeaderSignature+") or carry an admin token")
	}
	tenant, err := au.srv.verifier.VerifyRead(r.Method, r.URL.RequestURI(), h.Get(protocol.HeaderTenant), h.Get(protocol.HeaderKeyID),
		h.Get(protocol.HeaderTime), h.Get(protocol.HeaderSignature), intentKeys{au.srv.reads, au.srv.keys})
	if err != nil {
		return "", false, refusal(protocol.CodeUnauthorized, err.Error())
	}
	return tenant, false, nil
}

func (ep intentsAPI) handleTools(w http.ResponseWriter, r *http.Request) {
	format, aerr := parseToolsQuery(r.URL.RawQuery)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	out := []protocol.ToolView{}
	for _, rec := range ep.srv.reads.Tools() {
		t, ok := ep.srv.catalog.tool(rec.Name)
		if !ok {
			continue
		}
		caps := t.Capabilities
		if caps == nil {
			caps = []string{}
		}
		out = append(out, protocol.ToolView{Name: t.Name, Description: t.Description, InputSchema: jsontext.Value(t.InputSchema),
			Sandbox: t.Tier, Capabilities: caps, RequiresApproval: t.NeedsApproval(), ManifestHash: t.Hash})
	}
	if format != "" {
		writeJSON(w, http.StatusOK, functionTools(format, out))
		return
	}
	writeJSON(w, http.StatusOK, protocol.ToolList{Tools: out})
}
