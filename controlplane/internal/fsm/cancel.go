package fsm

import (
	"time"

	"github.com/writhq/writ/protocol"
)

// MsgCancel cancels one intent, or every intent of a run that has not ended.
const MsgCancel MsgType = 41

// StateCanceled is the final state of a canceled intent: one canceled before
// it was dispatched, or one whose node stopped its tool on the cancel and
// reported the result with status canceled.
const StateCanceled = "canceled"

// Cancel asks that an intent (IntentID) or all of a run's intents (RunID)
// stop. The server that proposes it has authorized the caller for Tenant;
// the FSM checks again that the intent is the tenant's. By names who asked,
// for the record ("admin", or the tenant's key id).
type Cancel struct {
	At       time.Time `json:"at"`
	Tenant   string    `json:"tenant"`
	IntentID string    `json:"intent_id,omitzero"`
	RunID    string    `json:"run_id,omitzero"`
	By       string    `json:"by"`
}

// applyCancel cancels the intent or the run's intents. An intent not yet
// dispatched (waiting for approval, or queued) ends canceled at once, with
// its receipt. A dispatched one stays dispatched, its dispatch marked
// canceled: the server holding its node's session tells the node
// (FrameCancel), and the node's signed result ends it (applyResult). An
// intent already final, or already asked to stop, is left as it is
// (Duplicate). An intent of another tenant is not found, as one that does
// not exist.
func (f *FSM) applyCancel(index uint64, c *Cancel) (Result, []string) {
	f.advance(c.At)
	if c.IntentID != "" {
		in := f.state.Intents[c.IntentID]
		if in == nil || in.Tenant != c.Tenant {
			return refuse(protocol.CodeNotFound, "no intent %q", c.IntentID), nil
		}
		changed, ok := f.cancelIntent(in, index, c.By)
		return Result{IntentID: in.ID, Duplicate: !ok}, changed
	}
	var changed []string
	for _, id := range f.runIntents(c.Tenant, c.RunID) {
		ch, _ := f.cancelIntent(f.state.Intents[id], index, c.By)
		changed = append(changed, ch...)
	}
	return Result{}, changed
}

// cancelIntent cancels one intent and reports whether anything changed.
func (f *FSM) cancelIntent(in *Intent, index uint64, by string) ([]string, bool) {
	now := f.state.Clock
	switch in.State {
	case StatePendingApproval, StateQueued:
		in.State = StateCanceled
		in.Error = &protocol.ErrorBody{Code: protocol.CodeCanceled, Message: "canceled by " + by + " before it was dispatched"}
		in.WaitUntil = time.Time{}
		in.UpdatedAt, in.Index = now, index
		return []string{in.ID}, true
	case StateDispatched:
		d := f.state.Dispatches[in.Dispatch.ID]
		if d == nil || !d.Open || d.Cancel {
			return nil, false
		}
		d.Cancel = true
		d.CancelBy = by
		in.UpdatedAt, in.Index = now, index
		return []string{in.ID, NodeWatch(d.Node)}, true
	}
	return nil, false
}

// runIntents returns the ids of a run's intents that have not ended, in the
// order of the tenant's index (admission time, then id).
func (f *FSM) runIntents(tenant, run string) []string {
	var ids []string
	f.idx.views.byTenant.AscendGreaterOrEqual(tenantKey{tenant: tenant}, func(k tenantKey) bool {
		if k.tenant != tenant {
			return false
		}
		if in := f.state.Intents[k.key]; in != nil && in.RunID == run && !Final(in.State) {
			ids = append(ids, in.ID)
		}
		return true
	})
	return ids
}

// RunIntents returns copies of a run's intents, ended or not, in admission
// order.
func (rd Reader) RunIntents(tenant, run string) []Intent {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	var out []Intent
	rd.f.idx.views.byTenant.AscendGreaterOrEqual(tenantKey{tenant: tenant}, func(k tenantKey) bool {
		if k.tenant != tenant {
			return false
		}
		if in := rd.f.state.Intents[k.key]; in != nil && in.RunID == run {
			out = append(out, *in)
		}
		return true
	})
	return out
}
