package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"

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

// writeJSON answers status with v encoded with jsonx.Stable and a newline.
// v is encoded before anything is written: one that cannot be encoded (a
// value JSON cannot hold, a bug) is answered 500 internal instead of an
// empty or cut answer under status, and logged with its Go types only,
// never its content. The log is slog's default: writeJSON and writeError
// are called where no server is at hand.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := jsonx.Marshal(v)
	if err != nil {
		attrs := []any{"status", status, "type", fmt.Sprintf("%T", v)}
		if se, ok := errors.AsType[*json.SemanticError](err); ok && se.GoType != nil {
			attrs = append(attrs, "failed_type", se.GoType.String())
		}
		slog.Default().Error("controlplane: a response could not be encoded; answered 500 internal", attrs...)
		status = protocol.HTTPStatus(protocol.CodeInternal)
		body, _ = jsonx.Marshal(protocol.ErrorResponse{Error: protocol.ErrorBody{Code: protocol.CodeInternal, Message: "the response could not be encoded"}})
		w.Header().Del("Retry-After")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, code protocol.Code, message string) {
	if code == protocol.CodeNoLeader || code == protocol.CodeAuthorizationChanged {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, protocol.HTTPStatus(code), protocol.ErrorResponse{Error: protocol.ErrorBody{Code: code, Message: message}})
}
