package fsm

import (
	"time"

	"github.com/writhq/writ/protocol"
)

// MsgAbandon records that the server holding a node's session could not sign
// one of its open dispatches, so that its slot is freed at once instead of at
// the dispatch's deadline.
const MsgAbandon MsgType = 40

// Abandon gives up an open dispatch that its node's server cannot sign. The
// signing inputs all come from the replicated state, so no server could.
type Abandon struct {
	At         time.Time `json:"at"`
	DispatchID string    `json:"dispatch_id"`
	Server     string    `json:"server"`
}

// applyAbandon closes an open dispatch that has no result and ends its
// intent: expired when the dispatch's or the intent's expiry has come (a
// node never starts such a dispatch), else rejected dispatch_unsignable. A
// dispatch already closed, or with a result, is left as it is. A result that
// arrives later all the same supersedes the intent's receipt (results.go).
func (f *FSM) applyAbandon(index uint64, c *Abandon) (Result, []string) {
	now := f.advance(c.At)
	d := f.state.Dispatches[c.DispatchID]
	switch {
	case d == nil:
		return refuse(protocol.CodeNotFound, "no dispatch %q", c.DispatchID), nil
	case !d.Open || d.Result != nil:
		return Result{IntentID: d.IntentID, Duplicate: true}, nil
	}
	changed := f.closeDispatch(d, index)
	in := f.state.Intents[d.IntentID]
	if in == nil || in.State != StateDispatched {
		return Result{IntentID: d.IntentID}, changed
	}
	if !d.ExpiresAt.After(d.IssuedAt) || !in.ExpiresAt.After(now) {
		f.scheduler().expire(in, index)
	} else {
		in.State = StateRejected
		in.Error = &protocol.ErrorBody{Code: protocol.CodeUnsignable, Message: "server " + c.Server + " could not sign dispatch " + d.ID}
		in.UpdatedAt, in.Index = now, index
	}
	return Result{IntentID: in.ID}, append(changed, in.ID)
}
