package protocol

import "regexp"

// ResultEgress is a node's record of what a tool with a network allowlist
// asked of the egress proxy: the first MaxEgressEntries connection
// attempts in order, and counts and byte totals over all of them. An
// optional member of a Result ("egress"): absent for a tool without an
// allowlist.
type ResultEgress struct {
	Entries []EgressEntry `json:"entries"`
	// Allowed and Refused count every attempt, listed or not.
	Allowed int64 `json:"allowed"`
	Refused int64 `json:"refused"`
	// BytesUp (tool to destination) and BytesDown total the allowed
	// connections' traffic.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// MaxEgressEntries bounds ResultEgress.Entries.
const MaxEgressEntries = 64

// MaxEgressHostLen bounds EgressEntry.Host, in characters.
const MaxEgressHostLen = 253

// EgressEntry is one connection attempt.
type EgressEntry struct {
	// Host is the destination as the tool named it (normalised when it was
	// a valid name); empty when its request could not be read.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Via is "connect" (HTTP proxy) or "sni" (TLS to an allowlisted port).
	Via     string `json:"via"`
	Allowed bool   `json:"allowed"`
	// Reason is the proxy's code for a refusal (not_allowed,
	// special_address, resolve_failed, dial_failed, sni_mismatch,
	// bad_request); absent when allowed.
	Reason    string `json:"reason,omitzero"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

// ResultAttest says what ran and what it used: an optional member of a
// Result ("attest"), absent when the tool never started.
type ResultAttest struct {
	// ExecDigest is "sha256:"+hex of the executable or wasm module the
	// tier ran, after resolving its path.
	ExecDigest string `json:"exec_digest"`
	// WallMS, CPUMS (user and system) and MaxRSSBytes are the run's
	// resource usage as the tier measured it; 0 is unknown.
	WallMS      int64 `json:"wall_ms"`
	CPUMS       int64 `json:"cpu_ms"`
	MaxRSSBytes int64 `json:"max_rss_bytes"`
}

var egressReason = regexp.MustCompile(`^[a-z][a-z_]{0,31}$`)

// validateAttest checks the optional egress and attest members.
func (r *Result) validateAttest() error {
	if e := r.Egress; e != nil {
		if len(e.Entries) > MaxEgressEntries {
			return malformed("egress.entries: more than %d", MaxEgressEntries)
		}
		if e.Allowed < 0 || e.Refused < 0 || e.BytesUp < 0 || e.BytesDown < 0 {
			return malformed("egress: counts must not be negative")
		}
		var allowed, refused int64
		for i, x := range e.Entries {
			switch {
			case x.Host != "" && !validName(x.Host, MaxEgressHostLen):
				return malformed("egress.entries[%d].host must be at most %d characters without control characters", i, MaxEgressHostLen)
			case x.Port < 0 || x.Port > 65535:
				return malformed("egress.entries[%d].port must be 0 to 65535", i)
			case x.Via != "connect" && x.Via != "sni":
				return malformed(`egress.entries[%d].via must be "connect" or "sni"`, i)
			case x.Allowed && x.Reason != "":
				return malformed("egress.entries[%d]: an allowed attempt has no reason", i)
			case !x.Allowed && !egressReason.MatchString(x.Reason):
				return malformed("egress.entries[%d].reason must be a refusal code ([a-z_], at most 32)", i)
			case x.Allowed && x.Host == "":
				return malformed("egress.entries[%d]: an allowed attempt names its host", i)
			case x.BytesUp < 0 || x.BytesDown < 0:
				return malformed("egress.entries[%d]: byte counts must not be negative", i)
			}
			if x.Allowed {
				allowed++
			} else {
				refused++
			}
		}
		if allowed > e.Allowed || refused > e.Refused {
			return malformed("egress: the counts must include every listed attempt")
		}
	}
	if a := r.Attest; a != nil {
		if err := checkHash("attest.exec_digest", a.ExecDigest); err != nil {
			return err
		}
		if a.WallMS < 0 || a.CPUMS < 0 || a.MaxRSSBytes < 0 {
			return malformed("attest: usage must not be negative")
		}
	}
	return nil
}
