package protocol

// The bodies of node enrollment: an admin issues a one-time join token, and
// a node trades it for its identity (POST /v1/admin/join-tokens, POST
// /v1/enroll).

// JoinTokenRequest is the body of POST /v1/admin/join-tokens.
type JoinTokenRequest struct {
	Labels map[string]string `json:"labels,omitzero"`
	// TTLSeconds is how long the token may be used (default 1 h, at most 7 days).
	TTLSeconds int64 `json:"ttl_seconds,omitzero"`
}

// JoinTokenResponse carries the token, shown once.
type JoinTokenResponse struct {
	Token     string            `json:"token"`
	ID        string            `json:"id"`
	Labels    map[string]string `json:"labels"`
	ExpiresAt string            `json:"expires_at"`
}

// EnrollRequest is the body of POST /v1/enroll: the token, the node's name,
// its Ed25519 result-signing key and a CSR for its TLS key, both generated on
// the node.
type EnrollRequest struct {
	Token  string `json:"token"`
	Name   string `json:"name"`
	Public []byte `json:"public"`
	CSR    []byte `json:"csr"`
}

// EnrollResponse names the node and carries its client certificate chain
// (DER, leaf first, then the CA).
type EnrollResponse struct {
	Node  string   `json:"node"`
	Chain [][]byte `json:"chain"`
}
