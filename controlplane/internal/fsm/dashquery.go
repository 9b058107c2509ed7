package fsm

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"
)

// Queries of the dashboard, answered from the views (views.go) under the
// read lock.

// IntentFilter selects intents; zero values match everything. After, when
// set, keeps only intents older than it (AdmittedAt, then ID): the cursor of
// the next page.
type IntentFilter struct {
	Tenant, Tool, Principal, State, Run string
	Since, Until                        time.Time
	After                               *IntentCursor
	Limit                               int
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
		q.Run != "" && in.RunID != q.Run,
		!q.Since.IsZero() && in.AdmittedAt.Before(q.Since), !q.Until.IsZero() && !in.AdmittedAt.Before(q.Until):
		return false
	case q.After != nil:
		c := in.AdmittedAt.Compare(q.After.At)
		return c < 0 || (c == 0 && in.ID < q.After.ID)
	}
	return true
}

// scanLimit bounds how many intents one page examines, so that a selective
// filter over a large state holds the read lock for a bounded time; the page
// then ends early with a cursor to go on from.
var scanLimit = 20000

// ListIntents returns up to q.Limit intents matching q, newest first, and the
// cursor of the next page (nil at the end). A page may hold fewer than
// q.Limit intents and still have a next one when the scan limit was reached.
func (rd Reader) ListIntents(q IntentFilter) ([]Intent, *IntentCursor) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	v := rd.f.idx.views
	var (
		out  []Intent
		next *IntentCursor
	)
	if q.State == StatePendingApproval {
		// Few, and kept apart: no scan.
		var hits []*Intent
		for id := range v.pending {
			if in := rd.f.state.Intents[id]; in != nil && q.keep(in) {
				hits = append(hits, in)
			}
		}
		slices.SortFunc(hits, func(a, b *Intent) int {
			if c := b.AdmittedAt.Compare(a.AdmittedAt); c != 0 {
				return c
			}
			return cmp.Compare(b.ID, a.ID)
		})
		for i, in := range hits {
			if q.Limit > 0 && i == q.Limit {
				next = &IntentCursor{At: out[i-1].AdmittedAt, ID: out[i-1].ID}
				break
			}
			out = append(out, *in)
		}
		return out, next
	}
	scanned, prev := 0, timedKey{}
	visit := func(k timedKey) bool {
		if q.After != nil && k.at.Equal(q.After.At) && k.key == q.After.ID {
			return true
		}
		if !q.Since.IsZero() && k.at.Before(q.Since) {
			return false // older still: nothing more can match
		}
		if q.Limit > 0 && len(out) == q.Limit {
			last := out[len(out)-1]
			next = &IntentCursor{At: last.AdmittedAt, ID: last.ID}
			return false
		}
		if scanned++; scanned > scanLimit {
			// The next page goes on after the last intent examined.
			next = &IntentCursor{At: prev.at, ID: prev.key}
			return false
		}
		prev = k
		if in := rd.f.state.Intents[k.key]; in != nil && q.keep(in) {
			out = append(out, *in)
		}
		return true
	}
	if q.Tenant != "" {
		// One tenant's intents, from its own index: no other tenant's is
		// examined.
		in := func(k tenantKey) bool {
			if k.tenant != q.Tenant {
				return k.tenant > q.Tenant // above the tenant's range: go on down into it
			}
			return visit(k.timedKey)
		}
		switch {
		case q.After != nil:
			v.byTenant.DescendLessOrEqual(tenantKey{q.Tenant, timedKey{q.After.At, q.After.ID}}, in)
		case !q.Until.IsZero():
			v.byTenant.DescendLessOrEqual(tenantKey{q.Tenant, timedKey{at: q.Until}}, in)
		default:
			v.byTenant.DescendLessOrEqual(tenantKey{tenant: q.Tenant + "\x00"}, in)
		}
		return out, next
	}
	switch {
	case q.After != nil:
		v.admitted.DescendLessOrEqual(timedKey{q.After.At, q.After.ID}, visit)
	case !q.Until.IsZero():
		v.admitted.DescendLessOrEqual(timedKey{at: q.Until}, visit)
	default:
		v.admitted.Descend(visit)
	}
	return out, next
}

// PendingApprovals counts the intents waiting for an approval.
func (rd Reader) PendingApprovals() int {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return len(rd.f.idx.views.pending)
}

// StatesPerMinute counts the intents last changed at or after since, by the
// minute of that change and their state.
func (rd Reader) StatesPerMinute(since time.Time) map[time.Time]map[string]int {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := map[time.Time]map[string]int{}
	for m, states := range rd.f.idx.views.minutes {
		if m.Before(since.Truncate(time.Minute)) || len(states) == 0 {
			continue
		}
		out[m] = maps.Clone(states)
	}
	return out
}

// NodeDispatches returns the intent ids of a node's most recent dispatches,
// newest first, at most limit, from the views' index by node.
func (rd Reader) NodeDispatches(node string, limit int) []string {
	if limit <= 0 {
		return nil // the dashboard's live node events ask for none: no scan
	}
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	var out []string
	rd.f.idx.views.byNode.DescendLessOrEqual(nodeFence{node: node, fence: math.MaxUint64}, func(d nodeFence) bool {
		if d.node != node || len(out) >= limit {
			return false
		}
		out = append(out, d.intentID)
		return true
	})
	return out
}

// ApproverKeys returns the public keys registered for an approver identity
// of a tenant, by key id.
func (rd Reader) ApproverKeys(tenant, approver string) map[string][]byte {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := map[string][]byte{}
	if t := rd.f.state.Tenants[tenant]; t != nil {
		for id, k := range t.ApproverKeys {
			if k.Approver == approver {
				out[id] = slices.Clone(k.Public)
			}
		}
	}
	return out
}
