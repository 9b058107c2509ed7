package protocol

// IntentResponse is the one shape of every API answer about an intent
// (PROTOCOL.md §5): its state, how policy decided, the approval it ran under,
// and the error that ended it, when one did.
type IntentResponse struct {
	IntentID string          `json:"intent_id"`
	State    string          `json:"state"`
	Policy   *PolicyDecision `json:"policy,omitempty"`
	Approval *ApprovalRef    `json:"approval,omitempty"`
	Error    *ErrorBody      `json:"error,omitempty"`
}

// ErrorResponse is the body of every refused request: {"error": {code, message}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}
