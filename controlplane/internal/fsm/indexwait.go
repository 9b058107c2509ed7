package fsm

import "context"

// indexWatch is the watch key that every applied entry wakes.
const indexWatch = "\x00index"

// WaitIndex blocks until this FSM has applied index, or ctx ends, woken by
// Apply rather than by polling; it reports whether the index was reached. A
// follower uses it to answer, from its own state, about a write the leader
// has applied.
func (rd Reader) WaitIndex(ctx context.Context, index uint64) bool {
	for {
		ch := rd.f.watch.watch(indexWatch)
		if rd.Index() >= index {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return rd.Index() >= index
		}
	}
}
