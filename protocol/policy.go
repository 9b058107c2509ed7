package protocol

import "time"

// PolicyView is the answer of GET /v1/admin/policy: the installed policy set.
// Version is the Raft index of the entry that installed it (0 for a set
// installed before versions were kept, or none installed yet).
type PolicyView struct {
	Version     uint64    `json:"version"`
	Hash        string    `json:"hash"`
	Text        string    `json:"text"`
	InstalledAt time.Time `json:"installed_at,omitzero"`
	RollbackOf  uint64    `json:"rollback_of,omitzero"`
}

// PolicyVersionSummary is one version in GET /v1/admin/policy/versions.
type PolicyVersionSummary struct {
	Version     uint64    `json:"version"`
	Hash        string    `json:"hash"`
	Bytes       int       `json:"bytes"`
	InstalledAt time.Time `json:"installed_at"`
	RollbackOf  uint64    `json:"rollback_of,omitzero"`
	Current     bool      `json:"current,omitzero"`
}

// PolicyVersions is the answer of GET /v1/admin/policy/versions: the kept
// versions, newest first.
type PolicyVersions struct {
	Versions []PolicyVersionSummary `json:"versions"`
}

// PolicyRollback is the body of POST /v1/admin/policy/rollback: reinstall
// the text of a kept version, as a new version.
type PolicyRollback struct {
	Version uint64 `json:"version"`
}

// PolicyDryRun is the body of POST /v1/admin/policy/dry-run: a candidate
// policy text, replayed against the authorization requests of the intents
// admitted since Since that the cluster still holds.
type PolicyDryRun struct {
	Text  string    `json:"text"`
	Since time.Time `json:"since"`
}

// The decisions a dry run and a policy test compare: DecisionDeny (as an
// approval's), DecisionAllow, and DecisionApproval, allowed once approved.
const (
	DecisionAllow    = "allow"
	DecisionApproval = "approval"
)

// PolicyChange is one intent whose decision the candidate would change.
type PolicyChange struct {
	IntentID   string    `json:"intent_id"`
	Tenant     string    `json:"tenant"`
	Principal  string    `json:"principal"`
	Tool       string    `json:"tool"`
	AdmittedAt time.Time `json:"admitted_at"`
	Before     string    `json:"before"`
	After      string    `json:"after"`
	// Policies are the candidate's determining policies.
	Policies []string `json:"policies"`
}

// PolicyDryRunResult is the answer of a dry run: how many intents were
// replayed, how many were skipped (their tool is no longer registered, or
// they were refused before the policy was consulted), and the changes, at
// most MaxPolicyChanges of them, newest first.
type PolicyDryRunResult struct {
	Hash      string         `json:"hash"`
	Since     time.Time      `json:"since"`
	Examined  int            `json:"examined"`
	Skipped   int            `json:"skipped"`
	Changed   int            `json:"changed"`
	Changes   []PolicyChange `json:"changes"`
	Truncated bool           `json:"truncated,omitzero"`
}

// MaxPolicyChanges bounds the changes a dry run lists; MaxPolicyReplay the
// intents it replays (the newest).
const (
	MaxPolicyChanges = 500
	MaxPolicyReplay  = 20000
)
