package controlplane

import (
	"net/http"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// canceler authenticates a cancel and names who asked, for the record.
func (ep intentsAPI) canceler(r *http.Request) (tenant string, all bool, by string, aerr *apiError) {
	tenant, all, aerr = ep.srv.auth().reader(r)
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
func (ep intentsAPI) handleCancelIntent(w http.ResponseWriter, r *http.Request) {
	tenant, all, by, aerr := ep.canceler(r)
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
	in, ok := ep.srv.reads.Intent(id)
	if !ok || (!all && in.Tenant != tenant) {
		writeError(w, protocol.CodeNotFound, "no intent "+id)
		return
	}
	if !fsm.Final(in.State) {
		if !ep.proposeCancel(w, r, fsm.Cancel{At: ep.srv.now(), Tenant: in.Tenant, IntentID: id, By: by}) {
			return
		}
		ep.srv.log.Info("intent cancel", "intent_id", id, "tenant", in.Tenant, "by", by)
	}
	ep.answerEntitled(w, r, id, wait)
}

// handleCancelRun cancels every intent of a run that has not ended and
// answers with the states of the run's intents.
func (ep intentsAPI) handleCancelRun(w http.ResponseWriter, r *http.Request) {
	tenant, all, by, aerr := ep.canceler(r)
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	wait, aerr := ep.srv.waitFor(r)
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
	for _, in := range ep.srv.reads.RunIntents(t, run) {
		waiting = waiting || !fsm.Final(in.State)
	}
	// A run with nothing left to stop needs no entry; one that gains an
	// intent meanwhile is the caller's to cancel again.
	if waiting {
		if !ep.proposeCancel(w, r, fsm.Cancel{At: ep.srv.now(), Tenant: t, RunID: run, By: by}) {
			return
		}
		ep.srv.log.Info("run cancel", "tenant", t, "run_id", run, "by", by)
	}
	deadline := time.Now().Add(wait)
	out := protocol.RunCancelResponse{Tenant: t, RunID: run, Intents: []protocol.RunIntentStatus{}}
	for _, in := range ep.srv.reads.RunIntents(t, run) {
		if !fsm.Final(in.State) {
			in, _ = ep.srv.wait(r.Context(), in.ID, time.Until(deadline))
		}
		out.Intents = append(out.Intents, protocol.RunIntentStatus{IntentID: in.ID, State: in.State, Error: in.Error})
	}
	writeJSON(w, http.StatusOK, out)
}

// proposeCancel puts a cancel through Raft. It reports false when it has
// answered the request itself (the server is at capacity).
func (ep intentsAPI) proposeCancel(w http.ResponseWriter, r *http.Request, c fsm.Cancel) bool {
	leave, ok := ep.srv.enter(w, r, 0) // no body: the cost of a request alone
	if !ok {
		return false
	}
	aerr := ep.commitCancel(r, c)
	leave()
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return false
	}
	return true
}

func (ep intentsAPI) commitCancel(r *http.Request, c fsm.Cancel) *apiError {
	res, err := ep.srv.apply(r.Context(), fsm.MsgCancel, c)
	if err != nil {
		return raftError(err)
	}
	if res.Err != nil {
		return refusal(res.Err.Code, res.Err.Message)
	}
	return nil
}
