package fsm

import (
	"bytes"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// RecordResult records a node's signed result of a dispatch. The server that
// received it verified its signature with the node's key before proposing.
type RecordResult struct {
	At         time.Time      `json:"at"`
	DispatchID string         `json:"dispatch_id"`
	IntentID   string         `json:"intent_id"`
	Node       string         `json:"node"`
	Status     string         `json:"status"`
	Error      string         `json:"error,omitzero"`
	Result     jsontext.Value `json:"result"` // canonical, as signed
}

// applyResult ends a dispatched intent with its node's result. The same result
// again (a node resending after a lost acknowledgement) is a repeat; another
// result for the same dispatch is refused. A result for an intent that was
// already given up as unknown is kept, and gets a receipt of its own that
// supersedes the unknown one.
func (f *FSM) applyResult(index uint64, c *RecordResult) (Result, []string) {
	now := f.advance(c.At)
	s := f.state
	d := s.Dispatches[c.DispatchID]
	switch {
	case d == nil:
		return refuse(protocol.CodeNotFound, "no dispatch %q", c.DispatchID), nil
	case d.Node != c.Node || d.IntentID != c.IntentID:
		return refuse(protocol.CodeWrongNode, "dispatch %q went to another node or intent", c.DispatchID), nil
	case d.Result != nil:
		if bytes.Equal(d.Result, c.Result) {
			return Result{IntentID: d.IntentID, Duplicate: true}, nil
		}
		return refuse(protocol.CodeResultConflict, "dispatch %q already has another result", c.DispatchID), nil
	}
	if n := s.Nodes[d.Node]; n == nil || n.Status == NodeRevoked {
		return refuse(protocol.CodeNodeRevoked, "node %q is revoked", d.Node), nil
	}
	in := s.Intents[d.IntentID]
	if in == nil {
		return refuse(protocol.CodeNotFound, "intent %q is no longer kept", d.IntentID), nil
	}
	d.Result = c.Result
	in.Result = c.Result
	in.UpdatedAt, in.Index = now, index
	changed := []string{in.ID}
	if !d.Open {
		// Given up as unknown before: a superseding receipt, in Apply.
		in.Superseding = true
		return Result{IntentID: in.ID}, changed
	}
	changed = append(changed, f.closeDispatch(d, index)...)
	in.State, in.Error = StateCompleted, nil
	if e := resultError(c.Status, c.Error); e != nil {
		in.State, in.Error = StateFailed, e
		switch c.Status {
		case protocol.StatusUnknown:
			in.State = StateUnknown
		case protocol.StatusCanceled:
			in.State = StateCanceled
		}
	}
	return Result{IntentID: in.ID}, changed
}

// closeDispatch frees the dispatch's slot on its node and lets queued intents
// have it.
func (f *FSM) closeDispatch(d *Dispatch, index uint64) []string {
	d.Open = false
	f.idx.closed(d.Node, d.ID)
	if n := f.state.Nodes[d.Node]; n != nil && n.InFlight > 0 {
		n.InFlight--
		f.scheduler().reschedule(n)
	}
	return append([]string{NodeWatch(d.Node)}, f.scheduler().drainQueue(index)...)
}

// expireDispatches ends, as unknown, intents whose node has not reported by
// the dispatch's deadline. Nothing is dispatched again: retrying is the
// orchestrator's decision.
func (f *FSM) expireDispatches(index uint64, now time.Time) []string {
	var changed []string
	for {
		e, ok := f.idx.deadlines.due(now)
		if !ok {
			return changed
		}
		d := f.state.Dispatches[e.key]
		if d == nil || !d.Open || !d.Deadline.Equal(e.at) {
			continue
		}
		changed = append(changed, f.closeDispatch(d, index)...)
		if in := f.state.Intents[d.IntentID]; in != nil && in.State == StateDispatched {
			in.State = StateUnknown
			in.Error = &protocol.ErrorBody{Code: protocol.CodeNodeSilent,
				Message: "node " + d.Node + " did not report by " + protocol.FormatTime(d.Deadline)}
			in.UpdatedAt, in.Index = now, index
			changed = append(changed, in.ID)
		}
	}
}

func resultError(status, msg string) *protocol.ErrorBody {
	var code protocol.Code
	switch status {
	case protocol.StatusOK:
		return nil
	case protocol.StatusTimeout:
		code = protocol.CodeTimeout
	case protocol.StatusOutputLimit:
		code = protocol.CodeOutputLimit
	case protocol.StatusDiskLimit:
		code = protocol.CodeDiskLimit
	case protocol.StatusRefused:
		code = protocol.CodeRefusedByNode
	case protocol.StatusUnknown:
		code = protocol.CodeInterrupted
	case protocol.StatusCanceled:
		code = protocol.CodeCanceled
	default:
		code = protocol.CodeToolError
	}
	if msg == "" {
		msg = "the tool ended with status " + status
	}
	return &protocol.ErrorBody{Code: code, Message: msg}
}
