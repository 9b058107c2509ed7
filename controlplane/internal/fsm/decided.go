package fsm

import (
	"cmp"
	"slices"
	"time"
)

// DecidedSince returns, newest first, up to limit intents admitted at or
// after since whose admission consulted the policy: what a policy dry run
// replays. The records are copies.
func (f *FSM) DecidedSince(since time.Time, limit int) []Intent {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var found []*Intent
	for _, in := range f.state.Intents {
		if in.Decision.PolicyHash != "" && !in.AdmittedAt.Before(since) && len(in.Raw) > 0 {
			found = append(found, in)
		}
	}
	slices.SortFunc(found, func(a, b *Intent) int {
		if c := b.AdmittedAt.Compare(a.AdmittedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	out := make([]Intent, 0, min(len(found), limit))
	for _, in := range found[:min(len(found), limit)] {
		out = append(out, *in)
	}
	return out
}
