package protocol

import (
	"slices"

	"github.com/go-json-experiment/json"
)

// AdminEntry records one change an administrator made: a policy, tool, key,
// tenant, token, session, join token, node state or lock. It is a leaf of the
// same ledger as receipts, appended in the same Raft entry as the change,
// and proved and verified exactly as a receipt is; its type member
// (AdminEntryType) is what keeps it from being taken for a receipt, whose
// type is ReceiptType. It names and hashes, and never carries a secret.
type AdminEntry struct {
	Type  string `json:"type"`
	Index uint64 `json:"index"`
	// Actor is who made the change: "admin-token:" and the first 16 hex
	// digits of the admin token's hash, "user:" and a dashboard user's id,
	// or "dev" for what writ dev sets up itself.
	Actor string `json:"actor"`
	// Action is one of AdminActions; Object the name or id of what it
	// changed ("tenant/key" for a tenant's key), and Tenant the tenant it
	// belongs to, when it belongs to one.
	Action string `json:"action"`
	Object string `json:"object"`
	Tenant string `json:"tenant,omitzero"`
	// Before and After are the SHA-256 of the canonical JSON of the
	// object's state before and after the change (the policy set's own hash
	// for the policy); absent when there was none.
	Before     string `json:"before,omitzero"`
	After      string `json:"after,omitzero"`
	RecordedAt string `json:"recorded_at"`
}

// AdminEntryType is the "type" of every admin entry.
const AdminEntryType = "writ.admin/v1"

// The admin actions an entry records.
const (
	AdminPolicyPut       = "policy.put"
	AdminPolicyRollback  = "policy.rollback"
	AdminToolPut         = "tool.put"
	AdminTenantPut       = "tenant.put"
	AdminKeyPut          = "key.put"
	AdminKeyDelete       = "key.delete"
	AdminApproverPut     = "approver.put"
	AdminApproverDelete  = "approver.delete"
	AdminTokenCreate     = "token.create"
	AdminTokenRevoke     = "token.revoke"
	AdminSessionRevoke   = "session.revoke"
	AdminJoinTokenCreate = "join_token.create"
	AdminNodeDrain       = "node.drain"
	AdminNodeReady       = "node.ready"
	AdminNodeRevoke      = "node.revoke"
	AdminLockCreate      = "lock.create"
	AdminLockDelete      = "lock.delete"
)

// MaxAdminObjectLen bounds an entry's Object: the longest object is a
// tenant's key, "tenant/key", two ids and a slash.
const MaxAdminObjectLen = 2*MaxIDLen + 1

// AdminActions is the vocabulary of Action, in a stable order.
var AdminActions = []string{AdminPolicyPut, AdminPolicyRollback, AdminToolPut, AdminTenantPut,
	AdminKeyPut, AdminKeyDelete, AdminApproverPut, AdminApproverDelete, AdminTokenCreate, AdminTokenRevoke,
	AdminSessionRevoke, AdminJoinTokenCreate, AdminNodeDrain, AdminNodeReady, AdminNodeRevoke,
	AdminLockCreate, AdminLockDelete}

func (a *AdminEntry) validate() error {
	if a.Type != AdminEntryType {
		return malformed("type must be %q", AdminEntryType)
	}
	if err := checkName("actor", a.Actor); err != nil {
		return err
	}
	if !slices.Contains(AdminActions, a.Action) {
		return malformed("action %.40q is not an admin action", a.Action)
	}
	if !validName(a.Object, MaxAdminObjectLen) {
		return malformed("object must be 1-%d characters without control characters", MaxAdminObjectLen)
	}
	if a.Tenant != "" {
		if err := checkID("tenant", a.Tenant); err != nil {
			return err
		}
	}
	for _, h := range []struct{ field, v string }{{"before", a.Before}, {"after", a.After}} {
		if h.v != "" {
			if err := checkHash(h.field, h.v); err != nil {
				return err
			}
		}
	}
	_, err := ParseTime(a.RecordedAt)
	return err
}

// Leaf returns the entry's ledger leaf: JCS(entry).
func (a *AdminEntry) Leaf() ([]byte, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(a, json.Deterministic(true))
	if err != nil {
		return nil, malformed("%v", err)
	}
	return Canonicalize(b)
}

// DecodeAdminEntry strictly decodes and structurally checks an admin entry:
// a receipt, or any other leaf, is malformed here.
func DecodeAdminEntry(data []byte, limit int) (*AdminEntry, error) {
	a := new(AdminEntry)
	if _, _, err := decodeStrict(data, limit, a); err != nil {
		return nil, err
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// LeafType returns the type member of a ledger leaf (ReceiptType,
// AdminEntryType), or "" when it has none or is not a JSON object.
func LeafType(leaf []byte) string {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(leaf, &head) != nil {
		return ""
	}
	return head.Type
}
