package fsm

import (
	"cmp"
	"slices"
	"time"
)

// DecidedSince returns, newest first, up to limit intents admitted at or
// after since whose admission consulted the policy: what a policy dry run
// replays. The records are copies. The state is read twice, briefly: the
// sort runs without holding Apply back, and an intent pruned in between is
// left out.
func (rd Reader) DecidedSince(since time.Time, limit int) []Intent {
	type found struct {
		id string
		at time.Time
	}
	var all []found
	rd.f.mu.RLock()
	for _, in := range rd.f.state.Intents {
		if in.Decision.PolicyHash != "" && !in.AdmittedAt.Before(since) && len(in.Raw) > 0 {
			all = append(all, found{in.ID, in.AdmittedAt})
		}
	}
	rd.f.mu.RUnlock()
	slices.SortFunc(all, func(a, b found) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	all = all[:min(len(all), limit)]
	out := make([]Intent, 0, len(all))
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	for _, x := range all {
		if in, ok := rd.f.state.Intents[x.id]; ok {
			out = append(out, *in)
		}
	}
	return out
}
