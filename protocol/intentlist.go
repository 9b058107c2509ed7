package protocol

import "time"

// IntentSummary is one intent in the answer of GET /v1/intents: who asked
// for what and where it stands, never its params or output.
type IntentSummary struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	Principal  string    `json:"principal"`
	RunID      string    `json:"run_id"`
	Tool       string    `json:"tool"`
	State      string    `json:"state"`
	ErrorCode  Code      `json:"error_code,omitempty"`
	AdmittedAt time.Time `json:"admitted_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// ReceiptIndex is the ledger index of the intent's receipt, once final.
	ReceiptIndex *uint64 `json:"receipt_index,omitempty"`
}

// IntentPage is the answer of GET /v1/intents: intents newest first and,
// when more may follow, the opaque cursor of the next page. A page may hold
// fewer intents than asked for, even none, and still have a next one.
type IntentPage struct {
	Intents []IntentSummary `json:"intents"`
	Next    string          `json:"next,omitempty"`
}
