package controlplane

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/writhq/writ/controlplane/internal/fsm"
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

// Error codes of the API beyond the protocol's.
const (
	codeUnauthorized  protocol.Code = "unauthorized"
	codeNoLeader      protocol.Code = "no_leader"
	codeInternal      protocol.Code = "internal"
	codeUnknownTool   protocol.Code = "unknown_tool"
	codeParamsInvalid protocol.Code = "params_invalid"
	codeNotFound      protocol.Code = "not_found"
)

// statusOf maps a code to its HTTP status: client faults are 4xx, server 5xx.
func statusOf(code protocol.Code) int {
	switch code {
	case protocol.CodeMalformed, codeParamsInvalid:
		return http.StatusBadRequest
	case protocol.CodeUnknownKey, protocol.CodeBadSignature, codeUnauthorized, protocol.CodeApprovalInvalid:
		return http.StatusUnauthorized
	case protocol.CodeApprovalForbidden, fsm.CodePolicyDenied:
		return http.StatusForbidden
	case fsm.CodeInvalidToken:
		return http.StatusUnauthorized
	case fsm.CodeNodeRevoked:
		return http.StatusForbidden
	case fsm.CodeNoEligibleNode:
		return http.StatusConflict
	case codeNotFound, codeUnknownTool:
		return http.StatusNotFound
	case fsm.CodeIdempotencyConflict, fsm.CodeNotPending, protocol.CodeApprovalReplayed, protocol.CodeApprovalMismatch, protocol.CodeApprovalDuplicate, fsm.CodeLockExists:
		return http.StatusConflict
	case protocol.CodeApprovalExpired, protocol.CodeExpired, protocol.CodeNotYetValid, protocol.CodeTTLTooLong, protocol.CodePayloadHashMismatch:
		return http.StatusUnprocessableEntity
	case codeNoLeader, fsm.CodeTooManySessions:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code protocol.Code, message string) {
	if code == codeNoLeader {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, statusOf(code), protocol.ErrorResponse{Error: protocol.ErrorBody{Code: code, Message: message}})
}
