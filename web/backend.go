package web

import (
	"context"
	"time"
)

// Backend is all the dashboard needs of the control plane. The control plane
// implements it (controlplane/dashboard.go); web never imports the control
// plane. Every method may be called concurrently; reads return copies.
type Backend interface {
	// SignIn checks a dashboard or admin token and opens a session on every
	// server, returning the session's secret, which only the cookie holds.
	// A token that is not valid is an *Error with code "unauthorized".
	// The session lasts ttl at most, and never past the token's expiry.
	SignIn(ctx context.Context, token string, ttl time.Duration) (secret string, p Principal, err error)
	// Session returns the principal of an open, unexpired session.
	Session(secret string) (Principal, bool)
	// SignOut closes a session everywhere.
	SignOut(ctx context.Context, secret string) error
	// AdminToken reports whether token is one of the configured admin tokens
	// (compared in constant time): /v1/events takes it instead of a cookie.
	AdminToken(token string) bool
	// Allowed asks the dashboard policy whether p may take action (view,
	// decide, manage) on page, for tenant ("" when cluster-wide);
	// intentPrincipal is the principal of the intent decided on.
	Allowed(p Principal, action, page, tenant, intentPrincipal string) bool

	Overview() Overview
	// Intents lists intents matching q, newest first.
	Intents(q IntentQuery) IntentPage
	Intent(id string) (IntentDetail, bool)
	// Checkpoint is the latest signed checkpoint, if one was published.
	Checkpoint() (Checkpoint, bool)
	// ApproverKeys returns the registered keys of an approver of a tenant:
	// key id → standard base64 of the Ed25519 public key. The browser signs
	// with the private half, which the server never sees.
	ApproverKeys(tenant, approver string) map[string]string
}

// Fleet is the optional part of a Backend that knows node agents; without it
// the fleet pages say there is no fleet.
type Fleet interface {
	Nodes() []Node
	// Node returns a node and its most recent dispatches, newest first.
	Node(id string, dispatches int) (Node, []IntentSummary, bool)
	// SetNodeStatus drains ("drain"), undrains ("ready") or revokes
	// ("revoke") a node.
	SetNodeStatus(ctx context.Context, id, action string) error
}

// Summarizer is an optional ability of a Backend: an intent's summary
// without the work of its detail (decoding its params), for the event
// stream, which makes one per change.
type Summarizer interface {
	IntentSummary(id string) (IntentSummary, bool)
}

// Error is an error with the API's stable code, safe to show to the user.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Principal is who a session belongs to. Approver is the approver identity an
// approver signs as; Tenant "" means every tenant.
type Principal struct {
	User      string
	Role      string
	Tenant    string
	Approver  string
	ExpiresAt time.Time
}

// Overview is the front page: the cluster, the fleet, recent traffic and the
// ledger.
type Overview struct {
	Server    string
	Leader    string
	Servers   []ServerInfo
	RaftIndex uint64
	// Nodes counts nodes by status.
	Nodes map[string]int
	// Minutes counts intents that reached a state, per minute, oldest first.
	Minutes    []Minute
	Pending    int
	Checkpoint *Checkpoint
	// Tenant is set when Minutes and Pending count one tenant's intents
	// only (the principal's); Capped says they count the most recent
	// scopedIntents of them.
	Tenant string
	Capped bool
}

// ServerInfo is one server of the Raft configuration.
type ServerInfo struct {
	ID, Address string
	Voter       bool
	Leader      bool
}

// Minute counts the intents whose last change fell in one minute, by state.
type Minute struct {
	Start  time.Time
	States map[string]int
}

// IntentQuery filters the intents list. Zero values match everything; Before
// is the cursor of the next page (IntentPage.Next); Limit is at most 200.
type IntentQuery struct {
	Tenant, Tool, Principal, State string
	Since, Until                   time.Time
	Before                         string
	Limit                          int
}

// IntentPage is one page of the intents list.
type IntentPage struct {
	Intents []IntentSummary
	Next    string // "" on the last page
}

// IntentSummary is an intent as lists show it.
type IntentSummary struct {
	ID, Tenant, Principal, RunID, Tool, State string
	AdmittedAt, UpdatedAt                     time.Time
	Node                                      string
	Receipt                                   *uint64
	ErrorCode                                 string
}

// IntentDetail is an intent's whole story, for its timeline and for approval.
type IntentDetail struct {
	IntentSummary
	PayloadHash    string
	IdempotencyKey string
	ExpiresAt      time.Time
	// Params is the canonical JSON (RFC 8785) of the intent's params: what
	// the approver reads and the browser hashes again.
	Params           string
	PolicyHash       string
	Allowed          bool
	ApprovalRequired bool
	Policies         []string
	Approval         *ApprovalInfo
	Dispatch         *DispatchInfo
	Result           *ResultInfo
	Error            *Error
	SupersededBy     *uint64
}

// ApprovalInfo is the approval an intent ran under (or was denied by).
type ApprovalInfo struct {
	ID, Approver, Decision, Hash, IssuedAt string
}

// DispatchInfo is the node run of an intent.
type DispatchInfo struct {
	ID, Node string
	Fence    uint64
}

// ResultInfo is what the node's signed result says, with the tool's captured
// output (base64 when OutputEncoding says so) while the cluster keeps it:
// OutputKept is false once it is gone. Backend.Intent fills it; a page shows
// it only to a viewer allowed the intent's tenant.
type ResultInfo struct {
	Status, Sandbox, Output, OutputEncoding, StartedAt, FinishedAt string
	ExitCode                                                       int
	OutputBytes                                                    int64
	Truncated, OutputKept                                          bool
	// ExecDigest is the SHA-256 of what ran (the result's attest), "" when
	// the result has none; Egress the egress proxy's record, nil when the
	// tool had no network allowlist.
	ExecDigest string
	Egress     *EgressInfo
}

// Node is a node agent as the fleet pages show it.
type Node struct {
	ID, Name, Status, OS, Arch, Version, Server string
	Labels                                      map[string]string
	Tiers, Tools                                []string
	Concurrency, InFlight                       int
	EnrolledAt, UpdatedAt                       time.Time
	// LastHeartbeat is zero when this server does not hold the session.
	LastHeartbeat time.Time
}

// Checkpoint is a signed checkpoint of the receipt ledger.
type Checkpoint struct {
	Origin      string
	Size        int64
	Root        string // base64
	Note        string // the signed note text
	VerifierKey string
}

// Admin is the optional part of a Backend that keeps the admin record and
// the locks; without it the dashboard has no audit page. Every change is
// made for the principal in ctx (WithPrincipal), which the record names.
type Admin interface {
	// AdminEntries returns the newest admin entries the control plane
	// recorded, newest first: at most limit, below the ledger index before
	// (0: from the newest).
	AdminEntries(before uint64, limit int) []AdminEntry
	// Locks returns the locks in force, by id.
	Locks() []Lock
	// CreateLock makes a lock; bad input is an *Error with code malformed.
	CreateLock(ctx context.Context, req LockRequest) (Lock, error)
	// DeleteLock removes a lock; an id that names none is an *Error with
	// code not_found.
	DeleteLock(ctx context.Context, id string) error
}

// AdminEntry is one admin change on the record (protocol.AdminEntry).
type AdminEntry struct {
	Index                                        uint64
	RecordedAt                                   time.Time
	Actor, Action, Object, Tenant, Before, After string
}

// Lock is a lock in force. ExpiresAt is zero for one that holds until it
// is deleted.
type Lock struct {
	ID, Tenant, Principal, Tool, Node, Reason string
	CreatedAt, ExpiresAt                      time.Time
}

// LockRequest is a lock to make: at least one of Tenant, Principal, Tool
// and Node, a reason, and a TTL (0: until deleted).
type LockRequest struct {
	Tenant, Principal, Tool, Node, Reason string
	TTL                                   time.Duration
}
