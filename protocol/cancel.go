package protocol

// RunCancelResponse is the answer of POST
// /v1/tenants/{tenant}/runs/{run}/cancel: every intent of the run the
// cluster still keeps, with the state it is in once the cancel is applied
// (or, with ?wait=, once each has ended or the wait is over). An intent that
// was dispatched stays "dispatched" until its node reports.
type RunCancelResponse struct {
	Tenant  string            `json:"tenant"`
	RunID   string            `json:"run_id"`
	Intents []RunIntentStatus `json:"intents"`
}

// RunIntentStatus is one intent of a canceled run.
type RunIntentStatus struct {
	IntentID string     `json:"intent_id"`
	State    string     `json:"state"`
	Error    *ErrorBody `json:"error,omitempty"`
}
