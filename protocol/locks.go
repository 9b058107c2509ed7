package protocol

// The bodies of the admin API's locks (POST, GET and DELETE /v1/admin/locks).

// LockView is a lock as the API shows it.
type LockView struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant,omitempty"`
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Node      string `json:"node,omitempty"`
	Reason    string `json:"reason"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

// LockRequest is the body of POST /v1/admin/locks: what the lock matches
// (the members that are set must all equal the intent's; Node: the node it
// would run on), how long it lasts (0: until deleted) and why.
type LockRequest struct {
	Tenant     string `json:"tenant"`
	Principal  string `json:"principal"`
	Tool       string `json:"tool"`
	Node       string `json:"node"`
	TTLSeconds int64  `json:"ttl_seconds"`
	Reason     string `json:"reason"`
}

// LockResponse answers POST /v1/admin/locks with the lock made.
type LockResponse struct {
	Lock LockView `json:"lock"`
}

// LockList answers GET /v1/admin/locks: the locks in force.
type LockList struct {
	Locks []LockView `json:"locks"`
}
