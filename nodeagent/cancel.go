package nodeagent

import (
	"context"
	"errors"
	"time"

	"github.com/writhq/writ/nodeagent/internal/store"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// maxEarlyCancels bounds the cancels remembered for dispatches that have not
// begun; earlyCancelKeep is how long one is remembered (past any dispatch's
// TTL and the clock skew, after which the dispatch would be refused anyway).
const (
	maxEarlyCancels = 4096
	earlyCancelKeep = 30 * time.Minute
)

// runStop is the cancel of one running dispatch.
type runStop struct {
	stop     context.CancelFunc
	canceled bool // set by Cancel, under Executor.mu
}

// Cancel stops a dispatch on the control plane's word (protocol.FrameCancel).
// A tool that runs is sent SIGTERM and, after the tier's grace period,
// SIGKILL (sandbox.Driver: cancelling the run's context); its result says
// status canceled unless it had ended by itself first. A dispatch that has
// not begun — its frame not handled yet, or waiting for a slot — never
// starts: it gets a result with status canceled. A dispatch that has a
// result already is not changed.
func (x *Executor) Cancel(dispatchID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.running[dispatchID]; r != nil {
		r.canceled = true
		r.stop()
		x.log.Info("dispatch canceled; stopping its tool", "dispatch", dispatchID)
		return
	}
	if ch := x.waiting[dispatchID]; ch != nil {
		delete(x.waiting, dispatchID)
		close(ch) // Handle answers it canceled without taking a slot
		return
	}
	now := x.now()
	if len(x.early) >= maxEarlyCancels {
		for id, at := range x.early {
			if now.Sub(at) > earlyCancelKeep || len(x.early) >= maxEarlyCancels {
				delete(x.early, id)
			}
		}
	}
	x.early[dispatchID] = now
}

// awaitSlot registers a dispatch waiting for a slot: the channel is closed
// if it is canceled meanwhile (or was before).
func (x *Executor) awaitSlot(id string) <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch := make(chan struct{})
	if _, ok := x.early[id]; ok {
		delete(x.early, id)
		close(ch)
		return ch
	}
	x.waiting[id] = ch
	return ch
}

// slotTaken forgets a dispatch that no longer waits for a slot.
func (x *Executor) slotTaken(id string) {
	x.mu.Lock()
	delete(x.waiting, id)
	x.mu.Unlock()
}

// startRun registers a dispatch about to run, and reports false when it was
// canceled before (then it must not run).
func (x *Executor) startRun(id string) (*runStop, context.Context, bool) {
	ctx, stop := context.WithCancel(x.ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.early[id]; ok {
		delete(x.early, id)
		stop()
		return nil, nil, false
	}
	r := &runStop{stop: stop}
	x.running[id] = r
	return r, ctx, true
}

// endRun forgets a run and reports whether Cancel stopped it. It may be
// called again: the answer stays.
func (x *Executor) endRun(id string, r *runStop) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.running, id)
	r.stop()
	return r.canceled
}

// canceledBeforeStart signs the result of a dispatch canceled before it
// began and puts it in the outbox: status canceled, nothing ran.
func (x *Executor) canceledBeforeStart(d *protocol.Dispatch) error {
	now := x.now()
	r := x.newResult(d.ID, d.IntentID)
	r.Status, r.ExitCode, r.Error = protocol.StatusCanceled, -1, "canceled: the control plane canceled the dispatch before it started"
	r.StartedAt, r.FinishedAt = formatTime(now), formatTime(now)
	b, err := x.sign(r)
	if err != nil {
		return err
	}
	x.log.Info("dispatch canceled before it started", "dispatch", d.ID, "intent", d.IntentID)
	if err := x.cfg.Store.Enqueue(d.ID, b); err != nil {
		if errors.Is(err, store.ErrQueued) || errors.Is(err, store.ErrAlreadyStarted) {
			return nil
		}
		return err
	}
	x.notify(d.ID, b, nil)
	return nil
}

// markCanceled makes r, the result of a run Cancel stopped, say so: status
// canceled, unless the tool had ended well by itself.
func markCanceled(r *protocol.Result, out sandbox.Outcome) {
	if out.Status == sandbox.StatusOK {
		return
	}
	why := out.Reason
	if why == "" {
		why = string(out.Status)
	}
	r.Status = protocol.StatusCanceled
	r.Error = "canceled: the control plane canceled the dispatch; the tool was stopped (" + why + ")"
}
