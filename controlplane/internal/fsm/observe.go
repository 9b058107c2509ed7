package fsm

import "sync/atomic"

// Observer is told, after each applied entry, the watch keys the entry
// changed: intent ids, NodeWatch keys and CheckpointWatch; after a restore it
// is called with reset set, as every key may have changed. It runs on the
// goroutine that applies the log, so it MUST return at once and never block:
// it hands the keys on and does its work elsewhere.
type Observer func(index uint64, keys []string, reset bool)

type observer struct{ fn atomic.Pointer[Observer] }

// Observe installs fn as the FSM's observer, replacing any other; nil removes
// it.
func (f *FSM) Observe(fn Observer) {
	if fn == nil {
		f.obs.fn.Store(nil)
		return
	}
	f.obs.fn.Store(&fn)
}

func (o *observer) tell(index uint64, keys []string, reset bool) {
	if fn := o.fn.Load(); fn != nil && (len(keys) > 0 || reset) {
		(*fn)(index, keys, reset)
	}
}

// NodeHook is told the id of each node whose record changed or that was given
// a dispatch, after the entry is applied; "" after a restore, when any may
// have. Like an Observer it runs on the goroutine that applies the log and
// MUST return at once.
type NodeHook func(node string)

// OnNodeChange installs fn as the FSM's node hook, replacing any other; nil
// removes it. A server uses it to push a node's dispatches over the session
// it holds, without a goroutine per session waiting for them.
func (f *FSM) OnNodeChange(fn NodeHook) {
	if fn == nil {
		f.nodeHook.Store(nil)
		return
	}
	f.nodeHook.Store(&fn)
}

func (f *FSM) tellNode(node string) {
	if fn := f.nodeHook.Load(); fn != nil {
		(*fn)(node)
	}
}
