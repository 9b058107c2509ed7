package protocol

import "net/http"

// Codes of the HTTP API, the dashboard and `writ mcp`, beyond the signed
// objects' own (errors.go). Each code is declared once, here or in
// errors.go, and answers the HTTP status HTTPStatus gives it.
const (
	// CodeUnauthorized: no credentials, or credentials that are not valid
	// (an API token, a dashboard session, writ mcp's bearer token).
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: valid credentials whose role may not do this.
	CodeForbidden Code = "forbidden"
	// CodeCSRF: a dashboard write without its session's CSRF token, or from
	// another origin.
	CodeCSRF Code = "csrf"
	// CodeForbiddenOrigin: a browser page of another origin called writ mcp.
	CodeForbiddenOrigin Code = "forbidden_origin"
	CodeNotFound        Code = "not_found"
	CodeParamsInvalid   Code = "params_invalid"
	// CodeNoLeader: no leader is known; answered with Retry-After.
	CodeNoLeader Code = "no_leader"
	// CodeAuthorizationChanged: an admission or approval was checked against
	// keys, tools or a policy set that an entry ordered before it in the log
	// changed; nothing was recorded. The server checks again and proposes
	// again a few times before answering it (503, with Retry-After).
	CodeAuthorizationChanged Code = "authorization_changed"
	// CodeOverloaded answers a request the server will not queue: 429, with
	// Retry-After, at once rather than after a wait.
	CodeOverloaded Code = "overloaded"
	// CodeUnavailable: writ mcp could not reach the control plane.
	CodeUnavailable Code = "unavailable"
	CodeInternal    Code = "internal"

	CodeIdempotencyConflict Code = "idempotency_conflict"
	CodeBudgetExhausted     Code = "budget_exhausted"
	CodePolicyDenied        Code = "policy_denied"
	// CodeNotPending refuses an approval of an intent that no longer waits
	// for one.
	CodeNotPending Code = "not_pending"
	// CodeAwaitingApproval: a writ mcp tool call whose intent still awaits
	// approval when the bounded wait ends (the intent goes on).
	CodeAwaitingApproval Code = "awaiting_approval"
	// CodeLockExists refuses a lock whose id is taken.
	CodeLockExists Code = "lock_exists"
	// CodeTooManySessions refuses a dashboard sign-in while the session
	// table is full.
	CodeTooManySessions Code = "too_many_sessions"

	// Codes of nodes: a join or session token that is not valid; a revoked
	// node; an intent no registered node could run, or none became able to
	// within the wait.
	CodeInvalidToken   Code = "invalid_token"
	CodeNodeRevoked    Code = "node_revoked"
	CodeNoEligibleNode Code = "no_eligible_node"

	// Codes an intent ends with, from its node's result or the server's
	// view of its dispatch; they are never an HTTP answer of their own.
	CodeResultConflict Code = "result_conflict"
	CodeToolError      Code = "tool_error"
	CodeTimeout        Code = "timeout"
	CodeOutputLimit    Code = "output_limit"
	CodeDiskLimit      Code = "disk_limit"
	CodeRefusedByNode  Code = "refused_by_node"
	CodeInterrupted    Code = "interrupted"
	CodeNodeSilent     Code = "node_silent"
	// CodeUnsignable ends an intent whose dispatch no server could sign: it
	// was never sent to its node.
	CodeUnsignable Code = "dispatch_unsignable"
)

// codeStatus is each code's HTTP status when it is the answer to a request.
// Client faults are 4xx, the server's 5xx.
var codeStatus = map[Code]int{
	CodeMalformed:     http.StatusBadRequest,
	CodeParamsInvalid: http.StatusBadRequest,

	CodeUnknownKey:      http.StatusUnauthorized,
	CodeBadSignature:    http.StatusUnauthorized,
	CodeUnauthorized:    http.StatusUnauthorized,
	CodeApprovalInvalid: http.StatusUnauthorized,
	CodeInvalidToken:    http.StatusUnauthorized,

	CodeApprovalForbidden: http.StatusForbidden,
	CodePolicyDenied:      http.StatusForbidden,
	CodeNodeRevoked:       http.StatusForbidden,
	CodeForbidden:         http.StatusForbidden,
	CodeCSRF:              http.StatusForbidden,
	CodeForbiddenOrigin:   http.StatusForbidden,

	CodeNotFound:    http.StatusNotFound,
	CodeUnknownTool: http.StatusNotFound,

	CodeNoEligibleNode:      http.StatusConflict,
	CodeIdempotencyConflict: http.StatusConflict,
	CodeNotPending:          http.StatusConflict,
	CodeApprovalReplayed:    http.StatusConflict,
	CodeApprovalMismatch:    http.StatusConflict,
	CodeApprovalDuplicate:   http.StatusConflict,
	CodeLockExists:          http.StatusConflict,

	CodeApprovalExpired:     http.StatusUnprocessableEntity,
	CodeExpired:             http.StatusUnprocessableEntity,
	CodeNotYetValid:         http.StatusUnprocessableEntity,
	CodeTTLTooLong:          http.StatusUnprocessableEntity,
	CodePayloadHashMismatch: http.StatusUnprocessableEntity,

	CodeOverloaded: http.StatusTooManyRequests,

	CodeNoLeader:             http.StatusServiceUnavailable,
	CodeAuthorizationChanged: http.StatusServiceUnavailable,
	CodeTooManySessions:      http.StatusServiceUnavailable,
	CodeUnavailable:          http.StatusServiceUnavailable,
}

// HTTPStatus is the HTTP status that answers a request refused with code:
// 500 for a code that is not a client's fault (CodeInternal) or is never an
// answer of its own.
func HTTPStatus(code Code) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
