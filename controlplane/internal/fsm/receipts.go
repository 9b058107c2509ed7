package fsm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// Ledger is the receipt log the FSM appends to: *ledger.Log. Appends happen in
// Apply, in log order, so every replica holds the same leaves at the same
// indexes; the FSM's state counts them, so replaying entries a durable store
// already holds checks them instead of appending them twice.
type Ledger interface {
	Size() int64
	Append(leaves ...[]byte) (int64, error)
	Leaf(index int64) ([]byte, error)
	SetCheckpoint(signed []byte) error
}

// PutCheckpoint installs a checkpoint the leader signed over leaves already
// applied, on every replica.
type PutCheckpoint struct {
	Note []byte `json:"note"`
}

// MsgPutCheckpoint carries a signed checkpoint.
const MsgPutCheckpoint MsgType = 19

// recorder is the apply side's record keeping: the receipt of an intent
// made final, appended to the ledger as a leaf, and the leaves of a batch
// of entries written together (batch.go). It runs under the FSM's write
// lock, from the apply functions.
type recorder struct{ f *FSM }

func (f *FSM) recorder() recorder { return recorder{f} }

// recordReceipt appends the receipt of an intent that has just reached its
// final state. A store that holds a different leaf at that index, or fails to
// append, stops the server: the receipt log must never silently differ from
// the Raft log.
func (rr recorder) recordReceipt(in *Intent) {
	if rr.f.ledger == nil {
		return
	}
	r := rr.receipt(in, outcomeOf(in.State), in.Error)
	rr.appendReceipt(in, r)
	in.Receipt = &r.Index
}

// recordRefused appends the receipt of an attempt refused without being
// kept (its intent id belongs to another attempt).
func (rr recorder) recordRefused(in *Intent, e *protocol.ErrorBody) {
	if rr.f.ledger == nil {
		return
	}
	rr.appendReceipt(in, rr.receipt(in, protocol.OutcomeRejected, e))
}

// recordSuperseding appends the receipt of a result that arrived after its
// intent was given up as unknown. The unknown receipt stays; this one names it
// and carries the result and the outcome it shows.
func (rr recorder) recordSuperseding(in *Intent) {
	in.Superseding = false
	if rr.f.ledger == nil {
		return
	}
	outcome, e := protocol.OutcomeCompleted, (*protocol.ErrorBody)(nil)
	if st, msg := resultStatus(in.Result); st != protocol.StatusOK {
		outcome, e = protocol.OutcomeFailed, resultError(st, msg)
		switch st {
		case protocol.StatusUnknown:
			outcome = protocol.OutcomeUnknown
		case protocol.StatusCanceled:
			outcome = protocol.OutcomeCanceled
		}
	}
	r := rr.receipt(in, outcome, e)
	old := *in.Receipt
	r.Supersedes = &old
	rr.appendReceipt(in, r)
	in.SupersededBy = &r.Index
}

func (rr recorder) receipt(in *Intent, outcome string, e *protocol.ErrorBody) *protocol.Receipt {
	s := rr.f.state
	r := &protocol.Receipt{
		Type: protocol.ReceiptType, Index: s.Receipts, IntentID: in.ID, Tenant: in.Tenant, Principal: in.Principal,
		Tool: in.Tool, PayloadHash: in.PayloadHash, IdempotencyKey: in.IdempotencyKey, Outcome: outcome,
		Error: e, Approval: in.Approval, Approvals: in.Approvals, Dispatch: in.Dispatch, Result: in.Result, RecordedAt: protocol.FormatTime(s.Clock),
	}
	if in.Decision.PolicyHash != "" {
		d := "deny"
		if in.Decision.Allow {
			d = "allow"
		}
		pol := in.Decision.Policies
		if pol == nil {
			pol = []string{}
		}
		r.Policy = &protocol.PolicyDecision{Hash: in.Decision.PolicyHash, Decision: d, Policies: pol}
	}
	return r
}

func (rr recorder) appendReceipt(in *Intent, r *protocol.Receipt) {
	leaf, err := r.Leaf()
	if err != nil {
		panic(fmt.Sprintf("fsm: receipt %d of intent %s: %v", r.Index, in.ID, err))
	}
	rr.putLeaf(int64(r.Index), leaf)
	rr.f.state.Receipts++
}

// resultStatus reads the status and error of a signed result the FSM holds.
func resultStatus(raw []byte) (status, msg string) {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		panic(fmt.Sprintf("fsm: a stored result does not decode: %v", err))
	}
	return r.Status, r.Error
}

// putLeaf appends leaf at index, or checks the leaf a durable store already
// holds there.
func (rr recorder) putLeaf(index int64, leaf []byte) {
	size := rr.ledgerSize()
	switch {
	case index < rr.f.ledger.Size():
		stored, err := rr.f.ledger.Leaf(index)
		if err != nil || !bytes.Equal(stored, leaf) {
			panic(fmt.Sprintf("fsm: the receipt log holds another receipt at %d than the Raft log makes (%v)", index, err))
		}
	case index == size:
		rr.appendLeaf(index, leaf)
	default:
		panic(fmt.Sprintf("fsm: the receipt log has %d receipts, the state %d", size, index))
	}
}

// applyCheckpoint installs a checkpoint. One older than the store's latest is
// an entry replayed after a restart, and changes nothing; one that disagrees
// with the store's tree breaks the ledger, which then refuses to serve.
func (f *FSM) applyCheckpoint(c *PutCheckpoint) {
	if f.ledger == nil {
		return
	}
	f.recorder().flushLeaves()
	err := f.untilSpace("store a checkpoint", func() error { return f.ledger.SetCheckpoint(c.Note) })
	if err != nil && !errors.Is(err, ledger.ErrRollback) {
		panic(fmt.Sprintf("fsm: checkpoint: %v", err))
	}
	f.state.Checkpoints++
	f.checkpointed = true
}

func outcomeOf(state string) string {
	switch state {
	case StateCompleted:
		return protocol.OutcomeCompleted
	case StateFailed:
		return protocol.OutcomeFailed
	case StateDenied:
		return protocol.OutcomeDenied
	case StateExpired:
		return protocol.OutcomeExpired
	case StateUnknown:
		return protocol.OutcomeUnknown
	case StateCanceled:
		return protocol.OutcomeCanceled
	}
	return protocol.OutcomeRejected
}
