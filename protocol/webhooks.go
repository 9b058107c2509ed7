package protocol

import "time"

// What the approval webhooks send, and the admin's view of them (GET
// /v1/admin/webhooks).

// WebhookPayload is the body of a delivery.
type WebhookPayload struct {
	Text     string        `json:"text"`
	Event    string        `json:"event"`
	Delivery string        `json:"delivery"`
	Intent   WebhookIntent `json:"intent"`
	Approval *ApprovalRef  `json:"approval,omitempty"`
	SentAt   time.Time     `json:"sent_at"`
}

// WebhookIntent is what a delivery tells of the intent: who asked for what,
// and where it stands; never its params or output.
type WebhookIntent struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Principal string    `json:"principal"`
	RunID     string    `json:"run_id"`
	Tool      string    `json:"tool"`
	State     string    `json:"state"`
	Policies  []string  `json:"policies"`
	ExpiresAt time.Time `json:"expires_at"`
}

// WebhookDelivery is one entry of the delivery log.
type WebhookDelivery struct {
	Delivery string    `json:"delivery"`
	Event    string    `json:"event"`
	IntentID string    `json:"intent_id"`
	URL      string    `json:"url"`
	Attempts int       `json:"attempts"`
	Status   int       `json:"status,omitzero"` // the last answer's HTTP status
	Error    string    `json:"error,omitzero"`
	OK       bool      `json:"ok"`
	At       time.Time `json:"at"`
}

// WebhookView is a configured webhook as the admin sees it: never its secret,
// and its URL as scheme and host only (the path of an incoming webhook is a
// secret too).
type WebhookView struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	MaxAttempts int      `json:"max_attempts"`
}

// WebhooksView is the answer of GET /v1/admin/webhooks: the webhooks, this
// server's delivery log (the leader's holds the deliveries), newest first,
// and the events dropped because the queue was full.
type WebhooksView struct {
	Webhooks   []WebhookView     `json:"webhooks"`
	Deliveries []WebhookDelivery `json:"deliveries"`
	Dropped    int               `json:"dropped"`
}
