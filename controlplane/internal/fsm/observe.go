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
