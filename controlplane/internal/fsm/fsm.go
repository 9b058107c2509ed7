package fsm

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/raft"
	"github.com/writhq/writ/protocol"
)

// Config sets the retention windows. They are part of the replicated behaviour:
// every replica MUST use the same values, as they decide what is pruned when.
type Config struct {
	// IdempotencyRetention is how long an idempotency key is remembered after
	// its intent was admitted (and how long a final intent stays queryable).
	IdempotencyRetention time.Duration
	// NonceMargin is kept beyond an approval's expiry before its nonce is
	// forgotten, so that clock skew cannot revive a consumed nonce.
	NonceMargin time.Duration
	// DispatchTTL is how long a node may take to start a dispatch;
	// DispatchGrace how long past the dispatch's expiry and the tool's
	// timeout a silent node is waited for before its intent ends unknown.
	DispatchTTL   time.Duration
	DispatchGrace time.Duration
	// NodeWait is how long an intent that no ready node may run stays
	// queued for one to connect (never past its expiry) before it ends
	// rejected no_eligible_node. 0: it ends so at once.
	NodeWait time.Duration
	// OutputRetention is how long a result's captured output is kept after
	// it was stored (0: outputs are not kept); never past its intent, so at
	// most IdempotencyRetention. OutputMaxBytes bounds the outputs kept in
	// all: past it the oldest are dropped first. Both are measured by the
	// FSM's own clock and sizes, so every replica drops the same ones.
	OutputRetention time.Duration
	OutputMaxBytes  int64
}

// DefaultConfig keeps idempotency keys for 24 hours and nonces for 10 minutes
// past their approval's expiry, outputs for 24 hours, 256 MiB in all, and
// lets an intent wait 30 s for a node.
func DefaultConfig() Config {
	return Config{IdempotencyRetention: 24 * time.Hour, NonceMargin: 10 * time.Minute,
		DispatchTTL: time.Minute, DispatchGrace: 30 * time.Second,
		OutputRetention: 24 * time.Hour, OutputMaxBytes: DefaultOutputMaxBytes, NodeWait: 30 * time.Second}
}

// DefaultOutputMaxBytes is the default bound on the outputs kept in all.
const DefaultOutputMaxBytes = 256 << 20

// Validate reports settings that would break the guarantees.
func (c Config) Validate() error {
	if c.IdempotencyRetention < time.Hour {
		return fmt.Errorf("fsm: idempotency retention %s is under an hour", c.IdempotencyRetention)
	}
	if c.NonceMargin < 0 {
		return fmt.Errorf("fsm: nonce margin must not be negative")
	}
	if c.DispatchTTL < time.Second || c.DispatchTTL > 15*time.Minute {
		return fmt.Errorf("fsm: dispatch TTL %s is not between 1s and 15m", c.DispatchTTL)
	}
	if c.DispatchGrace < time.Second {
		return fmt.Errorf("fsm: dispatch grace %s is under a second", c.DispatchGrace)
	}
	if c.NodeWait < 0 || c.NodeWait > time.Hour {
		return fmt.Errorf("fsm: node wait %s is not between 0 and 1h", c.NodeWait)
	}
	if c.OutputRetention < 0 || c.OutputRetention > c.IdempotencyRetention {
		return fmt.Errorf("fsm: output retention %s is not between 0 and the idempotency retention %s (an output goes with its intent)",
			c.OutputRetention, c.IdempotencyRetention)
	}
	if c.OutputMaxBytes < 0 {
		return fmt.Errorf("fsm: output max bytes must not be negative")
	}
	return nil
}

// Result is what Apply returns for a command: the intent it concerns and, for a
// refused command, the protocol error. Refused commands change nothing.
type Result struct {
	IntentID  string
	Duplicate bool // an idempotent repeat: the original intent is returned
	Err       *protocol.ErrorBody
}

// FSM is the replicated state machine: its apply side. Apply and Restore
// are called by Raft; what the API and the dashboard read goes through its
// read side, Reader (reader.go), which may be called concurrently from any
// goroutine.
type FSM struct {
	cfg Config

	mu    sync.RWMutex
	state *State
	idx   *indexes
	// applied is the index Index reports: state.Index once the receipts of
	// every entry up to it are in the ledger, so that a reader who waited
	// for an index finds its receipts there.
	applied uint64
	queued  atomic.Int64 // len(state.Queue), for Queued

	ledger       Ledger // nil: no receipts (tests of the state machine alone)
	checkpointed bool   // a checkpoint was applied by the current command
	batch        leafBatch

	watch    watchers
	obs      observer
	nodeHook atomic.Pointer[NodeHook]
	log      atomic.Pointer[slog.Logger]
	// noSpaceHook is OnNoSpace's function.
	noSpaceHook atomic.Pointer[func()]
}

var _ raft.FSM = (*FSM)(nil)

// New returns an empty FSM that appends receipts to lg (nil for none).
func New(cfg Config, lg Ledger) (*FSM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := newState()
	return &FSM{cfg: cfg, state: s, idx: buildIndexes(s), ledger: lg}, nil
}

// Apply applies one committed log entry: a batch of one. It returns a Result,
// or for a group entry (MsgGroup) a []Result. A command that cannot be
// decoded is a bug in this program or a corrupt log: it panics rather than
// let replicas diverge silently.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// CheckpointWatch is the watch key that a new checkpoint wakes;
// ReceiptsWatch the one that new receipts wake.
const (
	CheckpointWatch = "\x00checkpoint"
	ReceiptsWatch   = "\x00receipts"
)

func (f *FSM) receiptCount() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.Receipts
}

// ReceiptsChanged returns a channel closed when the next receipt is appended.
func (rd Reader) ReceiptsChanged() <-chan struct{} { return rd.f.watch.watch(ReceiptsWatch) }

// applyLocked applies one entry: a Result, or a []Result for a group.
func (f *FSM) applyLocked(l *raft.Log) (any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := MsgType(l.Data[0]); t == MsgGroup {
		return f.applyGroup(l.Index, l.Data[1:])
	}
	res, changed := f.apply(l.Index, MsgType(l.Data[0]), l.Data[1:])
	f.state.Index = l.Index
	f.recordFinal(changed)
	return res, changed
}

// recordFinal appends the receipts of the intents one command made final.
// Receipts are appended in the order intents became final here, which is
// log order (and command order within a group), and sorted within one
// command.
func (f *FSM) recordFinal(changed []string) {
	for _, id := range sortedUnique(changed) {
		in := f.state.Intents[id]
		if in != nil {
			f.idx.views.intent(in)
		}
		switch {
		case in == nil || !Final(in.State):
		case in.Receipt == nil:
			f.recorder().recordReceipt(in)
		case in.Superseding:
			f.recorder().recordSuperseding(in)
		}
	}
}

func (f *FSM) apply(index uint64, t MsgType, data []byte) (res Result, changed []string) {
	decode := func(v any) {
		if err := json.Unmarshal(data, v); err != nil {
			panic(fmt.Sprintf("fsm: cannot decode %s at index %d: %v", t, index, err))
		}
	}
	switch t {
	case MsgPutTenant:
		var c PutTenant
		decode(&c)
		f.state.tenant(c.Tenant).RunBudget = c.RunBudget
	case MsgPutIntentKey:
		var c PutIntentKey
		decode(&c)
		f.state.tenant(c.Tenant).IntentKeys[c.KeyID] = c.Sealed
	case MsgDeleteIntentKey:
		var c DeleteKey
		decode(&c)
		delete(f.state.tenant(c.Tenant).IntentKeys, c.KeyID)
	case MsgPutApproverKey:
		var c PutApproverKey
		decode(&c)
		f.state.tenant(c.Tenant).ApproverKeys[c.KeyID] = &ApproverKey{Public: c.Public, Approver: c.Approver}
	case MsgDeleteApproverKey:
		var c DeleteKey
		decode(&c)
		delete(f.state.tenant(c.Tenant).ApproverKeys, c.KeyID)
	case MsgPutTool:
		var c PutTool
		decode(&c)
		f.state.Tools[c.Name] = &c
		f.idx.sched = buildSched(f.state)                // which nodes may run it may have changed
		return Result{}, f.scheduler().drainQueue(index) // and which queued intents may run
	case MsgPutPolicy:
		var c PutPolicy
		decode(&c)
		f.state.Policy = c
		f.state.recordPolicy(index, c)
	case MsgAdmit:
		var c Admit
		decode(&c)
		return f.applyAdmit(index, &c)
	case MsgAdmitBinary:
		c, err := decodeAdmit(data)
		if err != nil {
			panic(fmt.Sprintf("fsm: cannot decode %s at index %d: %v", t, index, err))
		}
		return f.applyAdmit(index, c)
	case MsgApprove, MsgApproveChecked:
		var c Approve
		decode(&c)
		return f.applyApprove(index, &c)
	case MsgTick:
		var c Tick
		decode(&c)
		return Result{}, f.applyTick(index, c.At)
	case MsgPutCheckpoint:
		var c PutCheckpoint
		decode(&c)
		f.applyCheckpoint(&c)
	case MsgNoop:
	case MsgPutUser, MsgDeleteUser, MsgOpenSession, MsgCloseSession:
		return f.applyUsers(t, decode), nil
	case MsgPutJoinToken:
		var c PutJoinToken
		decode(&c)
		f.state.JoinTokens[c.ID] = &c
	case MsgEnroll:
		var c Enroll
		decode(&c)
		return f.applyEnroll(&c), nil
	case MsgNodeSession:
		var c NodeSession
		decode(&c)
		return f.applyNodeSession(index, &c)
	case MsgNodeStatus:
		var c NodeStatus
		decode(&c)
		return f.applyNodeStatus(index, &c)
	case MsgResult:
		var c RecordResult
		decode(&c)
		return f.applyResult(index, &c)
	case MsgAbandon:
		var c Abandon
		decode(&c)
		return f.applyAbandon(index, &c)
	case MsgCancel:
		var c Cancel
		decode(&c)
		return f.applyCancel(index, &c)
	case MsgPutLock:
		var c PutLock
		decode(&c)
		return f.applyPutLock(index, &c)
	case MsgDeleteLock:
		var c DeleteLock
		decode(&c)
		return f.applyDeleteLock(index, &c)
	case MsgAdmin:
		var c AdminCmd
		decode(&c)
		return f.applyAdmin(index, &c)
	case MsgPutOutput:
		var c PutOutput
		decode(&c)
		return f.applyOutput(&c), nil
	default:
		panic(fmt.Sprintf("fsm: unknown command type %d at index %d", t, index))
	}
	return Result{}, nil
}

// advance moves the FSM clock to at, never backwards, and returns it.
func (f *FSM) advance(at time.Time) time.Time {
	if at.After(f.state.Clock) {
		f.state.Clock = at.UTC()
	}
	return f.state.Clock
}

func refuse(code protocol.Code, format string, args ...any) Result {
	return Result{Err: &protocol.ErrorBody{Code: code, Message: fmt.Sprintf(format, args...)}}
}
