package protocol

import "github.com/go-json-experiment/json/jsontext"

// IntentResponse is the one shape of every API answer about an intent
// (PROTOCOL.md §5): its state, how policy decided, the approval it ran under,
// and the error that ended it, when one did.
type IntentResponse struct {
	IntentID string          `json:"intent_id"`
	State    string          `json:"state"`
	Policy   *PolicyDecision `json:"policy,omitempty"`
	Approval *ApprovalRef    `json:"approval,omitempty"`
	Error    *ErrorBody      `json:"error,omitempty"`
	// Dispatch names the node run of the intent; Result is the node's
	// signed result, exactly as signed.
	Dispatch *DispatchRef   `json:"dispatch,omitempty"`
	Result   jsontext.Value `json:"result,omitempty"`
	// SupersededBy is the index of a later receipt recording a result that
	// arrived after the intent was given up as unknown.
	SupersededBy *uint64 `json:"superseded_by,omitempty"`
	// Once the intent's receipt is covered by a signed checkpoint: the
	// receipt, its index, its inclusion proof and the checkpoint, in the
	// shapes of GET /v1/receipts/{index}.
	ReceiptIndex *uint64        `json:"receipt_index,omitempty"`
	Receipt      jsontext.Value `json:"receipt,omitempty"`
	Proof        []string       `json:"proof,omitempty"`
	Checkpoint   string         `json:"checkpoint,omitempty"`
}

// ErrorResponse is the body of every refused request: {"error": {code, message}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}
