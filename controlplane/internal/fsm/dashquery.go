package fsm

import (
	"cmp"
	"slices"
	"time"
)

// Queries of the dashboard. Each scans what it reads under the read lock:
// state is bounded by the retention windows, and a page asks once.

// IntentFilter selects intents; zero values match everything. After, when
// set, keeps only intents older than it (AdmittedAt, then ID): the cursor of
// the next page.
type IntentFilter struct {
	Tenant, Tool, Principal, State string
	Since, Until                   time.Time
	After                          *IntentCursor
	Limit                          int
}

// IntentCursor is where a page of intents ended.
type IntentCursor struct {
	At time.Time
	ID string
}

func (q *IntentFilter) keep(in *Intent) bool {
	switch {
	case q.Tenant != "" && in.Tenant != q.Tenant, q.Tool != "" && in.Tool != q.Tool,
		q.Principal != "" && in.Principal != q.Principal, q.State != "" && in.State != q.State,
		!q.Since.IsZero() && in.AdmittedAt.Before(q.Since), !q.Until.IsZero() && !in.AdmittedAt.Before(q.Until):
		return false
	case q.After != nil:
		c := in.AdmittedAt.Compare(q.After.At)
		return c < 0 || (c == 0 && in.ID < q.After.ID)
	}
	return true
}

// ListIntents returns up to q.Limit intents matching q, newest first, and
// whether more match.
func (f *FSM) ListIntents(q IntentFilter) ([]Intent, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var hits []*Intent
	for _, in := range f.state.Intents {
		if q.keep(in) {
			hits = append(hits, in)
		}
	}
	slices.SortFunc(hits, func(a, b *Intent) int {
		if c := b.AdmittedAt.Compare(a.AdmittedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	more := q.Limit > 0 && len(hits) > q.Limit
	if more {
		hits = hits[:q.Limit]
	}
	out := make([]Intent, len(hits))
	for i, in := range hits {
		out[i] = *in
	}
	return out, more
}

// StatesPerMinute counts the intents last changed at or after since, by the
// minute of that change and their state.
func (f *FSM) StatesPerMinute(since time.Time) map[time.Time]map[string]int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[time.Time]map[string]int{}
	for _, in := range f.state.Intents {
		if in.UpdatedAt.Before(since) {
			continue
		}
		m := in.UpdatedAt.Truncate(time.Minute)
		if out[m] == nil {
			out[m] = map[string]int{}
		}
		out[m][in.State]++
	}
	return out
}

// NodeDispatches returns the intent ids of a node's most recent dispatches,
// newest first, at most limit. It keeps only the newest limit while it scans:
// the dashboard asks on every change of a node, which may hold many
// dispatches, and asks for none (limit 0) in its live events.
func (f *FSM) NodeDispatches(node string, limit int) []string {
	if limit <= 0 {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	var ds []*Dispatch // newest first
	for _, d := range f.state.Dispatches {
		if d.Node != node || (len(ds) == limit && d.Fence <= ds[limit-1].Fence) {
			continue
		}
		i, _ := slices.BinarySearchFunc(ds, d, func(a, b *Dispatch) int { return cmp.Compare(b.Fence, a.Fence) })
		if len(ds) == limit {
			ds = ds[:limit-1]
		}
		ds = slices.Insert(ds, i, d)
	}
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.IntentID)
	}
	return out
}

// ApproverKeys returns the public keys registered for an approver identity
// of a tenant, by key id.
func (f *FSM) ApproverKeys(tenant, approver string) map[string][]byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[string][]byte{}
	if t := f.state.Tenants[tenant]; t != nil {
		for id, k := range t.ApproverKeys {
			if k.Approver == approver {
				out[id] = slices.Clone(k.Public)
			}
		}
	}
	return out
}
