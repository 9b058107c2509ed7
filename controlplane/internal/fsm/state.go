package fsm

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/protocol"
)

// Intent states. The first three are waiting; the rest are final. A queued
// intent may run but has no dispatch yet: it waits for a free slot on an
// eligible node, or for an eligible node to connect (Intent.WaitUntil).
const (
	StatePendingApproval = "pending_approval"
	StateQueued          = "queued"
	StateDispatched      = "dispatched"
	StateCompleted       = "completed"
	StateFailed          = "failed"
	StateDenied          = "denied"
	StateRejected        = "rejected"
	StateExpired         = "expired"
	StateUnknown         = "unknown"
)

// Final reports whether an intent in state s will never change again.
func Final(s string) bool {
	return s != StatePendingApproval && s != StateQueued && s != StateDispatched
}

// State is everything the FSM knows. It is encoded as JSON in snapshots; map
// keys encode sorted, so equal states encode to equal bytes.
type State struct {
	// Index is the last applied log index; Clock the latest entry time, which
	// never goes backwards even if a new leader's clock does.
	Index uint64    `json:"index"`
	Clock time.Time `json:"clock"`

	Tenants map[string]*Tenant `json:"tenants"`
	Tools   map[string]*Tool   `json:"tools"`
	Policy  PutPolicy          `json:"policy"`
	// PolicyVersions are the policy sets installed, oldest first, the last
	// being Policy: at most maxPolicyVersions, each numbered by the index of
	// the entry that installed it.
	PolicyVersions []PolicyVersion    `json:"policy_versions,omitzero"`
	Intents        map[string]*Intent `json:"intents"`
	// Idempotency maps tenant + "\x00" + key to the intent it admitted.
	Idempotency map[string]*IdemEntry `json:"idempotency"`
	// Runs maps tenant + "\x00" + run id to its use of the run budget.
	Runs map[string]*Run `json:"runs"`
	// Nonces maps consumed approval nonces to the time they may be forgotten.
	Nonces map[string]time.Time `json:"nonces"`
	// Receipts counts the receipts appended to the ledger; the next one's
	// index. Checkpoints counts the checkpoints installed.
	Receipts    uint64 `json:"receipts"`
	Checkpoints uint64 `json:"checkpoints"`
	// Admin are the ledger indexes of the newest admin entries (admin.go),
	// oldest first: at most MaxAdminEntries.
	Admin []uint64 `json:"admin,omitzero"`

	// AuthIndex is the index of the last entry that changed what an
	// admission's or an approval's check reads (authz.go); 0 for none.
	AuthIndex uint64 `json:"auth_index,omitzero"`

	// Nodes are the enrolled node agents, by id; JoinTokens the unused
	// enrollment tokens, by id.
	Nodes      map[string]*Node      `json:"nodes"`
	JoinTokens map[string]*JoinToken `json:"join_tokens"`
	// Dispatches are kept while their intent is; Queue holds, in order, the
	// runnable intents waiting for a free slot on an eligible node.
	Dispatches map[string]*Dispatch `json:"dispatches"`
	Queue      []string             `json:"queue"`

	// Users are the dashboard's tokens, by id; Sessions its sessions, by the
	// hash of their cookie (users.go).
	Users    map[string]*User    `json:"users"`
	Sessions map[string]*Session `json:"sessions"`

	// Outputs are the captured outputs of results, by intent id
	// (outputs.go): kept beside the intents, never in receipts.
	Outputs map[string]*Output `json:"outputs"`

	// Locks are the admin's locks, by id (locks.go).
	Locks map[string]*Lock `json:"locks,omitempty"`
}

// Tenant holds a tenant's settings and keys.
type Tenant struct {
	RunBudget    int64                   `json:"run_budget"`
	IntentKeys   map[string][]byte       `json:"intent_keys"` // key id → sealed secret
	ApproverKeys map[string]*ApproverKey `json:"approver_keys"`
}

// ApproverKey is a registered approver public key.
type ApproverKey struct {
	Public   []byte `json:"public"`
	Approver string `json:"approver"`
}

// Tool is a registered tool manifest.
type Tool = PutTool

// Intent is the record of one admitted intent.
type Intent struct {
	ID             string         `json:"id"`
	Tenant         string         `json:"tenant"`
	Principal      string         `json:"principal"`
	RunID          string         `json:"run_id"`
	Tool           string         `json:"tool"`
	PayloadHash    string         `json:"payload_hash"`
	IdempotencyKey string         `json:"idempotency_key"`
	Raw            jsontext.Value `json:"raw"`
	State          string         `json:"state"`
	AdmittedAt     time.Time      `json:"admitted_at"`
	ExpiresAt      time.Time      `json:"expires_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	// Index is the log index of the last change, for watchers.
	Index       uint64                `json:"index"`
	Decision    Decision              `json:"decision"`
	Error       *protocol.ErrorBody   `json:"error,omitempty"`
	Approval    *protocol.ApprovalRef `json:"approval,omitempty"`
	ApprovalRaw jsontext.Value        `json:"approval_raw,omitempty"`
	// Approvals are the approvals given, in order, of an intent that needs
	// several distinct approvers (Decision.Approvals); Approval is the last.
	Approvals []protocol.ApprovalRef `json:"approvals,omitempty"`
	// Receipt is the ledger index of the intent's receipt, once final.
	Receipt *uint64 `json:"receipt,omitempty"`
	// Target narrows where the intent may run (from the intent).
	Target *protocol.Target `json:"target,omitempty"`
	// WaitUntil is set while a queued intent has no eligible node: when its
	// wait for one ends (node_wait, at most its expiry). Zero otherwise.
	WaitUntil time.Time `json:"wait_until,omitzero"`
	// Dispatch names the dispatch of the intent once it has one (a queued
	// intent has none); Result is its node's signed result.
	Dispatch *protocol.DispatchRef `json:"dispatch,omitempty"`
	Result   jsontext.Value        `json:"result,omitempty"`
	// Superseding is set while a late result waits for its receipt;
	// SupersededBy is that receipt's index.
	Superseding  bool    `json:"superseding,omitempty"`
	SupersededBy *uint64 `json:"superseded_by,omitempty"`
	// Unbound is set for an attempt refused before a decision, and for an
	// intent rejected no_eligible_node (which gives its key back): it holds
	// no idempotency key and is pruned a retention after its admission.
	Unbound bool `json:"unbound,omitempty"`
}

// Run counts the intents admitted in one run. It is forgotten one idempotency
// retention after its last use.
type Run struct {
	Used   int64     `json:"used"`
	LastAt time.Time `json:"last_at"`
}

// IdemEntry remembers which intent an idempotency key admitted, and when.
type IdemEntry struct {
	IntentID    string    `json:"intent_id"`
	PayloadHash string    `json:"payload_hash"`
	At          time.Time `json:"at"`
}

func newState() *State {
	return &State{
		Tenants:     map[string]*Tenant{},
		Tools:       map[string]*Tool{},
		Intents:     map[string]*Intent{},
		Idempotency: map[string]*IdemEntry{},
		Runs:        map[string]*Run{},
		Nonces:      map[string]time.Time{},
		Nodes:       map[string]*Node{},
		JoinTokens:  map[string]*JoinToken{},
		Dispatches:  map[string]*Dispatch{},
		Users:       map[string]*User{},
		Sessions:    map[string]*Session{},
		Outputs:     map[string]*Output{},
		Locks:       map[string]*Lock{},
	}
}

func scoped(tenant, key string) string { return tenant + "\x00" + key }

func (s *State) tenant(name string) *Tenant {
	t := s.Tenants[name]
	if t == nil {
		t = &Tenant{IntentKeys: map[string][]byte{}, ApproverKeys: map[string]*ApproverKey{}}
		s.Tenants[name] = t
	}
	return t
}
