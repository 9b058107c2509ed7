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
	// ApprovalsRequired (when more than one) and Approvals: the distinct
	// approvers the intent needs, and the approvals given so far.
	ApprovalsRequired int           `json:"approvals_required,omitempty"`
	Approvals         []ApprovalRef `json:"approvals,omitempty"`
	Error             *ErrorBody    `json:"error,omitempty"`
	// Dispatch names the node run of the intent; Result is the node's
	// signed result, exactly as signed.
	Dispatch *DispatchRef   `json:"dispatch,omitempty"`
	Result   jsontext.Value `json:"result,omitempty"`
	// Output is the captured output of a writ.result/v2, served only to a
	// reader entitled to the intent's tenant and only while the cluster
	// keeps it; OutputEncoding is "base64" when it is not UTF-8.
	Output         *string `json:"output,omitempty"`
	OutputEncoding string  `json:"output_encoding,omitempty"`
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

// OutputResponse is the answer of GET /v1/intents/{id}/output: the captured
// output of the intent's result with the hashes and sizes its signed result
// commits to. Output is the text when it is UTF-8, otherwise its standard
// base64 and OutputEncoding is "base64".
type OutputResponse struct {
	IntentID       string `json:"intent_id"`
	DispatchID     string `json:"dispatch_id"`
	Output         string `json:"output"`
	OutputEncoding string `json:"output_encoding,omitempty"`
	OutputHash     string `json:"output_hash"`
	OutputBytes    int64  `json:"output_bytes"`
	CapturedHash   string `json:"captured_hash"`
	CapturedBytes  int64  `json:"captured_bytes"`
	Truncated      bool   `json:"truncated"`
}
