package fsm

import (
	"fmt"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
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
}

// DefaultConfig keeps idempotency keys for 24 hours and nonces for 10 minutes
// past their approval's expiry.
func DefaultConfig() Config {
	return Config{IdempotencyRetention: 24 * time.Hour, NonceMargin: 10 * time.Minute}
}

// Validate reports settings that would break the guarantees.
func (c Config) Validate() error {
	if c.IdempotencyRetention < time.Hour {
		return fmt.Errorf("fsm: idempotency retention %s is under an hour", c.IdempotencyRetention)
	}
	if c.NonceMargin < 0 {
		return fmt.Errorf("fsm: nonce margin must not be negative")
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

// FSM is the replicated state machine. Apply and Restore are called by Raft;
// the read methods may be called concurrently from any goroutine.
type FSM struct {
	cfg Config

	mu    sync.RWMutex
	state *State
	idx   *indexes

	ledger       Ledger // nil: no receipts (tests of the state machine alone)
	checkpointed bool   // a checkpoint was applied by the current command

	watch watchers
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

// Apply applies one committed log entry. A command that cannot be decoded is
// a bug in this program or a corrupt log: it panics rather than let replicas
// diverge silently.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if len(l.Data) == 0 {
		panic(fmt.Sprintf("fsm: empty command at index %d", l.Index))
	}
	res, changed := f.applyLocked(l)
	for _, id := range changed {
		f.watch.notify(id)
	}
	if f.checkpointed {
		f.checkpointed = false
		f.watch.notify(CheckpointWatch)
	}
	return res
}

// CheckpointWatch is the watch key that a new checkpoint wakes.
const CheckpointWatch = "\x00checkpoint"

func (f *FSM) applyLocked(l *raft.Log) (Result, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res, changed := f.apply(l.Index, MsgType(l.Data[0]), l.Data[1:])
	f.state.Index = l.Index
	// Receipts are appended in the order intents became final here, which is
	// log order, and sorted within one entry.
	for _, id := range sortedUnique(changed) {
		if in := f.state.Intents[id]; in != nil && Final(in.State) && in.Receipt == nil {
			f.recordReceipt(in)
		}
	}
	return res, changed
}

func (f *FSM) apply(index uint64, t MsgType, data []byte) (res Result, changed []string) {
	decode := func(v any) {
		if err := jsonv2.Unmarshal(data, v); err != nil {
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
	case MsgPutPolicy:
		var c PutPolicy
		decode(&c)
		f.state.Policy = c
	case MsgAdmit:
		var c Admit
		decode(&c)
		return f.applyAdmit(index, &c)
	case MsgApprove:
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
