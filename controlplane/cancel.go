package controlplane

import (
	"net/http"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// cancelRoutes registers the stop buttons: an intent, or a run. Both are
// authorized as a signed read of the intent's tenant (its orchestrator key
// signs the method and path) or by the admin token; an intent of another
// tenant is not found, exactly as one that does not exist.
func (s *Server) cancelRoutes(mux *routeMux) {
	mux.HandleFunc("POST /v1/intents/{id}/cancel", s.handleCancelIntent)
	mux.HandleFunc("POST /v1/tenants/{tenant}/runs/{run}/cancel", s.handleCancelRun)
}

// canceler authenticates a cancel and names who asked, for the record.
func (s *Server) canceler(r *http.Request) (tenant string, all bool, by string, aerr *apiError) {
	tenant, all, aerr = s.reader(r)
	if aerr != nil {
		return "", false, "", aerr
	}
	if all {
		return "", true, "the admin", nil
	}
	return tenant, false, "key " + r.Header.Get(protocol.HeaderKeyID) + " of tenant " + tenant, nil
}

// handleCancelIntent cancels one intent and answers with its state, as GET
// /v1/intents/{id} does (?wait= likewise). A final intent is left as it is
// and answered the same way: cancelling is idempotent.
func (s *Server) handleCancelIntent(w http.ResponseWriter, r *http.Request) {
	tenant, all, by, aerr := s.canceler(r)
	if aerr != nil {
		s.refuse(w, r, aerr)
		return
	}
	wait, aerr := s.waitFor(r)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	id := r.PathValue("id")
	in, ok := s.fsm.Intent(id)
	if !ok || (!all && in.Tenant != tenant) {
		writeError(w, protocol.CodeNotFound, "no intent "+id)
		return
	}
	if !fsm.Final(in.State) {
		if !s.proposeCancel(w, r, fsm.Cancel{At: s.now(), Tenant: in.Tenant, IntentID: id, By: by}) {
			return
		}
		s.log.Info("intent cancel", "intent_id", id, "tenant", in.Tenant, "by", by)
	}
	s.answerEntitled(w, r, id, wait)
}

// handleCancelRun cancels every intent of a run that has not ended and
// answers with the states of the run's intents.
func (s *Server) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	tenant, all, by, aerr := s.canceler(r)
	if aerr != nil {
		s.refuse(w, r, aerr)
		return
	}
	wait, aerr := s.waitFor(r)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	t, run := r.PathValue("tenant"), r.PathValue("run")
	if !all && t != tenant {
		writeError(w, protocol.CodeNotFound, "no run "+run)
		return
	}
	if t == "" || run == "" {
		writeError(w, protocol.CodeMalformed, "a tenant and a run id are required")
		return
	}
	waiting := false
	for _, in := range s.fsm.RunIntents(t, run) {
		waiting = waiting || !fsm.Final(in.State)
	}
	// A run with nothing left to stop needs no entry; one that gains an
	// intent meanwhile is the caller's to cancel again.
	if waiting {
		if !s.proposeCancel(w, r, fsm.Cancel{At: s.now(), Tenant: t, RunID: run, By: by}) {
			return
		}
		s.log.Info("run cancel", "tenant", t, "run_id", run, "by", by)
	}
	deadline := time.Now().Add(wait)
	out := protocol.RunCancelResponse{Tenant: t, RunID: run, Intents: []protocol.RunIntentStatus{}}
	for _, in := range s.fsm.RunIntents(t, run) {
		if !fsm.Final(in.State) {
			in, _ = s.wait(r.Context(), in.ID, time.Until(deadline))
		}
		out.Intents = append(out.Intents, protocol.RunIntentStatus{IntentID: in.ID, State: in.State, Error: in.Error})
	}
	writeJSON(w, http.StatusOK, out)
}

// proposeCancel puts a cancel through Raft. It reports false when it has
// answered the request itself (the server is at capacity).
func (s *Server) proposeCancel(w http.ResponseWriter, r *http.Request, c fsm.Cancel) bool {
	leave, ok := s.enter(w, r, 0) // no body: the cost of a request alone
	if !ok {
		return false
	}
	aerr := s.commitCancel(r, c)
	leave()
	if aerr != nil {
		s.refuse(w, r, aerr)
		return false
	}
	return true
}

func (s *Server) commitCancel(r *http.Request, c fsm.Cancel) *apiError {
	res, err := s.apply(r.Context(), fsm.MsgCancel, c)
	if err != nil {
		return raftError(err)
	}
	if res.Err != nil {
		return refusal(res.Err.Code, res.Err.Message)
	}
	return nil
}
