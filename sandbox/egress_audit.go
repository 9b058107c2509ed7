package sandbox

// EgressAudit is what a tool with a network allowlist asked of the egress
// proxy during one invocation: the first MaxEgressEntries connection
// attempts in order, and counts and byte totals over all of them.
type EgressAudit struct {
	Entries []EgressEntry `json:"entries"`
	// Allowed and Refused count every attempt, listed or not.
	Allowed int `json:"allowed"`
	Refused int `json:"refused"`
	// BytesUp (tool to destination) and BytesDown total every allowed
	// connection's traffic.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// MaxEgressEntries bounds EgressAudit.Entries.
const MaxEgressEntries = 64

// EgressEntry is one connection attempt.
type EgressEntry struct {
	Host string `json:"host"` // as the tool asked, normalised when it could be
	Port int    `json:"port"`
	// Via is "connect" (HTTP proxy) or "sni" (TLS straight to an
	// allowlisted port).
	Via     string `json:"via"`
	Allowed bool   `json:"allowed"`
	// Reason is the proxy's stable refusal code (not_allowed,
	// special_address, resolve_failed, dial_failed, sni_mismatch,
	// bad_request), "" when allowed.
	Reason    string `json:"reason,omitempty"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}
