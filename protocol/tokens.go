package protocol

// The bodies of the admin API's tokens and dashboard sessions (POST and GET
// /v1/admin/tokens, GET /v1/admin/sessions).

// TokenRequest is the body of POST /v1/admin/tokens.
type TokenRequest struct {
	Role string `json:"role"`
	// Tenant limits a viewer or an auditor to one tenant, and binds an
	// approver to one.
	Tenant string `json:"tenant,omitzero"`
	// Approver is the approver identity an approver signs as (the one its
	// public key is registered with).
	Approver string `json:"approver,omitzero"`
	// Outputs lets an auditor read tools' outputs.
	Outputs bool `json:"outputs,omitzero"`
	// TTLSeconds is how long the token may sign in (default 30 days, at most
	// a year).
	TTLSeconds int64 `json:"ttl_seconds,omitzero"`
}

// TokenResponse carries the token, shown once.
type TokenResponse struct {
	Token     string `json:"token"`
	ID        string `json:"id"`
	Role      string `json:"role"`
	Tenant    string `json:"tenant,omitzero"`
	Approver  string `json:"approver,omitzero"`
	Outputs   bool   `json:"outputs,omitzero"`
	ExpiresAt string `json:"expires_at"`
}

// TokenInfo is an issued token as GET /v1/admin/tokens lists it: a
// dashboard token (role viewer, approver or admin) or an unused join token
// (role node).
type TokenInfo struct {
	ID        string            `json:"id"`
	Role      string            `json:"role"`
	Tenant    string            `json:"tenant,omitzero"`
	Approver  string            `json:"approver,omitzero"`
	Labels    map[string]string `json:"labels,omitzero"`
	CreatedAt string            `json:"created_at,omitzero"`
	ExpiresAt string            `json:"expires_at"`
	// Sessions counts the token's open sessions.
	Sessions int `json:"sessions"`
}

// SessionInfo is an open dashboard session as GET /v1/admin/sessions lists
// it. User is the token's id, or "admin-token" for a configured admin token.
type SessionInfo struct {
	ID        string `json:"id"`
	User      string `json:"user"`
	Role      string `json:"role"`
	Tenant    string `json:"tenant,omitzero"`
	Approver  string `json:"approver,omitzero"`
	OpenedAt  string `json:"opened_at,omitzero"`
	ExpiresAt string `json:"expires_at"`
}
