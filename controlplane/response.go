package controlplane

import (
	"net/http"
	"strconv"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

func responseFor(in fsm.Intent) protocol.IntentResponse {
	r := protocol.IntentResponse{IntentID: in.ID, State: in.State, Approval: in.Approval, Error: in.Error,
		Dispatch: in.Dispatch, Result: in.Result, SupersededBy: in.SupersededBy, Approvals: in.Approvals}
	if in.Decision.Approvals > 1 {
		r.ApprovalsRequired = in.Decision.Approvals
	}
	if in.Decision.PolicyHash != "" {
		d := "deny"
		if in.Decision.Allow {
			d = "allow"
		}
		r.Policy = &protocol.PolicyDecision{Hash: in.Decision.PolicyHash, Decision: d, Policies: in.Decision.Policies}
	}
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	jsonx.Encode(w, v)
}

func writeError(w http.ResponseWriter, code protocol.Code, message string) {
	if code == protocol.CodeNoLeader {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, protocol.HTTPStatus(code), protocol.ErrorResponse{Error: protocol.ErrorBody{Code: code, Message: message}})
}
