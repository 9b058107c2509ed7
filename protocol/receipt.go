package protocol

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Receipt records one authenticated attempt. Its ledger leaf is JCS(receipt).
type Receipt struct {
	Type           string          `json:"type"`
	Index          uint64          `json:"index"`
	IntentID       string          `json:"intent_id"`
	Tenant         string          `json:"tenant"`
	Principal      string          `json:"principal"`
	Tool           string          `json:"tool"`
	PayloadHash    string          `json:"payload_hash"`
	IdempotencyKey string          `json:"idempotency_key"`
	Outcome        string          `json:"outcome"`
	Error          *ErrorBody      `json:"error,omitzero"`
	Policy         *PolicyDecision `json:"policy"`
	Approval       *ApprovalRef    `json:"approval"`
	// Approvals are every approval of an intent that needed several distinct
	// approvers (policy @approvals("N") or the tool's approvals_required), in
	// the order given; absent for an intent that needed one.
	Approvals []ApprovalRef `json:"approvals,omitzero"`
	Dispatch  *DispatchRef  `json:"dispatch"`
	// Result is the node's signed result exactly as canonical JSON, so that its
	// signature can be checked from the receipt alone; null when there is none.
	Result     jsontext.Value `json:"result"`
	Supersedes *uint64        `json:"supersedes,omitzero"`
	RecordedAt string         `json:"recorded_at"`
}

// ReceiptType is the "type" of every receipt.
const ReceiptType = "writ.receipt/v1"

// The outcomes a receipt records.
const (
	OutcomeCompleted  = "completed"
	OutcomeFailed     = "failed"
	OutcomeDenied     = "denied"
	OutcomeRejected   = "rejected"
	OutcomeExpired    = "expired"
	OutcomeUnknown    = "unknown"
	OutcomeSuperseded = "superseded"
	// OutcomeCanceled: the intent was canceled before it ran, or its node
	// stopped the tool on the control plane's word (the result then says
	// status canceled). Receipts written before it existed are unchanged.
	OutcomeCanceled = "canceled"
)

// ErrorBody is the wire form of an error: a stable code and a message.
type ErrorBody struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// PolicyDecision records how policy decided: the hash of the policy set, the
// decision, and the ids of the policies that determined it.
type PolicyDecision struct {
	Hash     string   `json:"hash"`
	Decision string   `json:"decision"`
	Policies []string `json:"policies"`
}

// ApprovalRef names the approval an intent ran under: its id, who approved, and
// the hash of the JCS of the whole signed artifact.
type ApprovalRef struct {
	ID       string `json:"id"`
	Approver string `json:"approver"`
	Hash     string `json:"hash"`
}

// DispatchRef names the dispatch of an intent: its id, node and Raft fence.
type DispatchRef struct {
	ID    string `json:"id"`
	Node  string `json:"node"`
	Fence uint64 `json:"fence"`
}

func (r *Receipt) validate() error {
	if r.Type != ReceiptType {
		return malformed("type must be %q", ReceiptType)
	}
	if err := checkID("intent_id", r.IntentID); err != nil {
		return err
	}
	switch r.Outcome {
	case OutcomeCompleted, OutcomeFailed, OutcomeDenied, OutcomeRejected,
		OutcomeExpired, OutcomeUnknown, OutcomeSuperseded, OutcomeCanceled:
	default:
		return malformed("outcome %.40q is not a receipt outcome", r.Outcome)
	}
	if r.Result != nil && r.Result.Kind() != '{' && r.Result.Kind() != 'n' {
		return malformed("result must be a signed result object or null")
	}
	_, err := ParseTime(r.RecordedAt)
	return err
}

// Leaf returns the receipt's ledger leaf: JCS(receipt).
func (r *Receipt) Leaf() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	if b, ok := r.appendLeaf(make([]byte, 0, r.leafSizeHint())); ok {
		return b, nil
	}
	return r.leafSlow()
}

// DecodeReceipt strictly decodes and structurally checks a receipt.
func DecodeReceipt(data []byte, limit int) (*Receipt, error) {
	r := new(Receipt)
	if _, _, err := decodeStrict(data, limit, r); err != nil {
		return nil, err
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}
