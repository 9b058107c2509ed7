package fsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// MsgType is the first byte of every log entry: which command follows.
// Values are part of the log format and never change meaning.
type MsgType uint8

// The commands. Each has one apply function.
const (
	MsgPutTenant         MsgType = 1
	MsgPutIntentKey      MsgType = 2
	MsgDeleteIntentKey   MsgType = 3
	MsgPutApproverKey    MsgType = 4
	MsgDeleteApproverKey MsgType = 5
	MsgPutTool           MsgType = 6
	MsgPutPolicy         MsgType = 7
	MsgAdmit             MsgType = 16
	MsgApprove           MsgType = 17
	MsgTick              MsgType = 18
)

func (t MsgType) String() string {
	switch t {
	case MsgPutTenant:
		return "put_tenant"
	case MsgPutIntentKey:
		return "put_intent_key"
	case MsgDeleteIntentKey:
		return "delete_intent_key"
	case MsgPutApproverKey:
		return "put_approver_key"
	case MsgDeleteApproverKey:
		return "delete_approver_key"
	case MsgPutTool:
		return "put_tool"
	case MsgPutPolicy:
		return "put_policy"
	case MsgAdmit:
		return "admit"
	case MsgAdmitBinary:
		return "admit_binary"
	case MsgApprove:
		return "approve"
	case MsgApproveChecked:
		return "approve_checked"
	case MsgTick:
		return "tick"
	case MsgPutCheckpoint:
		return "put_checkpoint"
	case MsgNoop:
		return "noop"
	case MsgGroup:
		return "group"
	case MsgPutJoinToken:
		return "put_join_token"
	case MsgEnroll:
		return "enroll"
	case MsgNodeSession:
		return "node_session"
	case MsgNodeStatus:
		return "node_status"
	case MsgResult:
		return "result"
	case MsgAbandon:
		return "abandon"
	case MsgPutOutput:
		return "put_output"
	case MsgCancel:
		return "cancel"
	case MsgPutLock:
		return "put_lock"
	case MsgDeleteLock:
		return "delete_lock"
	case MsgAdmin:
		return "admin"
	case MsgPutUser, MsgDeleteUser, MsgOpenSession, MsgCloseSession:
		return userMsgName(t)
	}
	return fmt.Sprintf("msg(%d)", uint8(t))
}

// Encode returns a log entry: the type byte, then the command as JSON
// (encoding/json/v2 semantics, which decodes the entry again in Apply), or,
// for MsgAdmitBinary, the binary encoding of an *Admit.
func Encode(t MsgType, cmd any) ([]byte, error) {
	if t == MsgAdmitBinary {
		c, ok := cmd.(*Admit)
		if !ok {
			return nil, fmt.Errorf("fsm: %s carries an *Admit, not %T", t, cmd)
		}
		return EncodeAdmit(c)
	}
	if t == MsgApproveChecked {
		// One form: an approval with no check index is a MsgApprove.
		if c, ok := cmd.(*Approve); !ok || c.CheckIndex == 0 {
			return nil, fmt.Errorf("fsm: %s carries an *Approve with a check index", t)
		}
	}
	var buf bytes.Buffer
	buf.Grow(512)
	buf.WriteByte(byte(t))
	var opts []json.Options
	if t == MsgAdmit {
		// The intent it carries is canonical JSON (the leader verified or
		// canonicalized it), so it has no duplicate member names: checking
		// again, name by name, was most of the cost of encoding. The FSM
		// decodes with every check.
		opts = append(opts, jsontext.AllowDuplicateNames(true))
	}
	if err := json.MarshalWrite(&buf, cmd, opts...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PutTenant creates or updates a tenant's settings.
type PutTenant struct {
	Tenant string `json:"tenant"`
	// RunBudget is the number of intents one run may have admitted; 0 is none.
	RunBudget int64 `json:"run_budget"`
}

// PutIntentKey registers an orchestrator HMAC key. The secret is sealed with
// the cluster keyring before it is proposed: the log, snapshots and state hold
// only ciphertext.
type PutIntentKey struct {
	Tenant string `json:"tenant"`
	KeyID  string `json:"key_id"`
	Sealed []byte `json:"sealed"`
}

// DeleteKey removes an orchestrator or approver key.
type DeleteKey struct {
	Tenant string `json:"tenant"`
	KeyID  string `json:"key_id"`
}

// PutApproverKey registers an approver's Ed25519 public key and the identity
// it signs as.
type PutApproverKey struct {
	Tenant   string `json:"tenant"`
	KeyID    string `json:"key_id"`
	Public   []byte `json:"public"`
	Approver string `json:"approver"`
}

// PutTool registers a tool: its canonical registration (controlplane/internal/
// tools.Spec) and the hash of its manifest, which identifies it to agents.
type PutTool struct {
	Name string         `json:"name"`
	Hash string         `json:"hash"`
	Spec jsontext.Value `json:"spec"`
	// What scheduling needs of the spec: the manifest's tier and timeout,
	// and the labels a node must have.
	Tier      string            `json:"tier"`
	TimeoutMS int64             `json:"timeout_ms"`
	Selector  map[string]string `json:"selector,omitzero"`
}

// PutPolicy installs a new version of the Cedar policy set. At is the
// leader's time of the change (absent in entries written before it was
// recorded: the FSM's clock stands in); RollbackOf names the version whose
// text a rollback reinstalls.
type PutPolicy struct {
	Text       string    `json:"text"`
	Hash       string    `json:"hash"`
	At         time.Time `json:"at,omitzero"`
	RollbackOf uint64    `json:"rollback_of,omitzero"`
}

// MaxApprovals bounds the distinct approvers an intent may need.
const MaxApprovals = 10

// Decision is the leader's authorization of an intent, made before proposing.
type Decision struct {
	Allow            bool     `json:"allow"`
	ApprovalRequired bool     `json:"approval_required"`
	PolicyHash       string   `json:"policy_hash"`
	Policies         []string `json:"policies"`
	// Approvals is how many distinct approvers must approve, when more than
	// one (at most MaxApprovals); 0 when one approval is enough.
	Approvals int `json:"approvals,omitzero"`
	// Error is why the intent was not allowed (policy_denied, params_invalid,
	// an authenticated verification failure…); empty when allowed.
	Error *protocol.ErrorBody `json:"error,omitempty"`
}

// Admit records an authenticated intent and the leader's decision on it. The
// FSM applies idempotency and the run budget.
type Admit struct {
	At     time.Time      `json:"at"`
	Intent jsontext.Value `json:"intent"` // the canonical signed intent
	// The members the FSM needs, decoded by the leader from Intent.
	ID             string           `json:"id"`
	Tenant         string           `json:"tenant"`
	Principal      string           `json:"principal"`
	RunID          string           `json:"run_id"`
	Tool           string           `json:"tool"`
	PayloadHash    string           `json:"payload_hash"`
	IdempotencyKey string           `json:"idempotency_key"`
	ExpiresAt      time.Time        `json:"expires_at"`
	Target         *protocol.Target `json:"target,omitzero"`
	Decision       Decision         `json:"decision"`
	// CheckIndex is the FSM index the leader verified and decided the
	// intent against; the admission is refused if keys, tools or the policy
	// set changed after it (authz.go). 0, in entries written before it was
	// carried: not compared.
	CheckIndex uint64 `json:"check_index,omitzero"`
}

// Approve records a verified approval or denial of a pending intent and
// consumes its nonce.
type Approve struct {
	At             time.Time      `json:"at"`
	Approval       jsontext.Value `json:"approval"` // the canonical signed approval
	ID             string         `json:"id"`
	IntentID       string         `json:"intent_id"`
	Tenant         string         `json:"tenant"`
	Approver       string         `json:"approver"`
	Decision       string         `json:"decision"`
	Nonce          string         `json:"nonce"`
	NonceExpiresAt time.Time      `json:"nonce_expires_at"`
	Hash           string         `json:"hash"` // of the canonical artifact
	Policies       []string       `json:"policies"`
	// CheckIndex is the FSM index the leader verified the approval against,
	// as Admit's.
	CheckIndex uint64 `json:"check_index,omitzero"`
}

// Tick carries the leader's clock: intents past expiry end as expired, and
// idempotency entries and nonces past their retention are pruned.
type Tick struct {
	At time.Time `json:"at"`
}
