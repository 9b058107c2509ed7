package fsm

import (
	"cmp"
	"time"

	"github.com/google/btree"
)

// views are the dashboard's indexes over the state, kept up to date as
// entries apply so that a page reads what it shows instead of scanning every
// intent while holding the lock that Apply waits for. Like the other indexes
// they are derived: rebuilt after a restore, never part of a snapshot.
type views struct {
	// admitted orders every intent by admission time, then id.
	admitted *btree.BTreeG[timedKey]
	// byTenant orders every intent by tenant, then admission time, then id:
	// one tenant's list reads only that tenant's intents.
	byTenant *btree.BTreeG[tenantKey]
	// pending holds the intents waiting for an approval.
	pending map[string]struct{}
	// byNode orders dispatches by node, then fence.
	byNode *btree.BTreeG[nodeFence]
	// minutes counts intents by the minute of their last change and their
	// state; counted remembers where each intent is counted.
	minutes map[time.Time]map[string]int
	counted map[string]countedAt
}

type tenantKey struct {
	tenant string
	timedKey
}

func lessTenant(a, b tenantKey) bool {
	if a.tenant != b.tenant {
		return a.tenant < b.tenant
	}
	return lessTimed(a.timedKey, b.timedKey)
}

type nodeFence struct {
	node     string
	fence    uint64
	intentID string
}

type countedAt struct {
	minute time.Time
	state  string
}

// minuteSpan is how far back the per-minute counts are kept.
const minuteSpan = 2 * time.Hour

func lessTimed(a, b timedKey) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return a.key < b.key
}

func lessNodeFence(a, b nodeFence) bool {
	if c := cmp.Compare(a.node, b.node); c != 0 {
		return c < 0
	}
	return a.fence < b.fence
}

func newViews() *views {
	return &views{
		admitted: btree.NewG(32, lessTimed),
		byTenant: btree.NewG(32, lessTenant),
		pending:  map[string]struct{}{},
		byNode:   btree.NewG(32, lessNodeFence),
		minutes:  map[time.Time]map[string]int{},
		counted:  map[string]countedAt{},
	}
}

// intent brings the views up to date with in, new or changed.
func (v *views) intent(in *Intent) {
	// An intent's admission time, id and tenant never change, so the ordered
	// views take it once, when it is first seen: counted holds every intent
	// they hold (forget removes it from all three).
	if _, seen := v.counted[in.ID]; !seen {
		v.admitted.ReplaceOrInsert(timedKey{in.AdmittedAt, in.ID})
		v.byTenant.ReplaceOrInsert(tenantKey{in.Tenant, timedKey{in.AdmittedAt, in.ID}})
	}
	if in.State == StatePendingApproval {
		v.pending[in.ID] = struct{}{}
	} else {
		delete(v.pending, in.ID)
	}
	v.uncount(in.ID)
	at := countedAt{in.UpdatedAt.Truncate(time.Minute), in.State}
	if v.minutes[at.minute] == nil {
		v.prune(at.minute)
		v.minutes[at.minute] = map[string]int{}
	}
	v.minutes[at.minute][at.state]++
	v.counted[in.ID] = at
}

// forget removes in, which the state no longer keeps.
func (v *views) forget(in *Intent) {
	v.admitted.Delete(timedKey{in.AdmittedAt, in.ID})
	v.byTenant.Delete(tenantKey{in.Tenant, timedKey{in.AdmittedAt, in.ID}})
	delete(v.pending, in.ID)
	v.uncount(in.ID)
}

func (v *views) uncount(id string) {
	at, ok := v.counted[id]
	if !ok {
		return
	}
	delete(v.counted, id)
	if m := v.minutes[at.minute]; m != nil {
		if m[at.state]--; m[at.state] <= 0 {
			delete(m, at.state)
		}
	}
}

// prune drops the counts of minutes long before now; an intent counted in
// one of them is still uncounted safely.
func (v *views) prune(now time.Time) {
	for m := range v.minutes {
		if m.Before(now.Add(-minuteSpan)) {
			delete(v.minutes, m)
		}
	}
}

func (v *views) dispatched(d *Dispatch) {
	v.byNode.ReplaceOrInsert(nodeFence{d.Node, d.Fence, d.IntentID})
}

func (v *views) dropDispatch(d *Dispatch) {
	v.byNode.Delete(nodeFence{node: d.Node, fence: d.Fence})
}

func buildViews(s *State) *views {
	v := newViews()
	for _, id := range sortedKeys(s.Intents) {
		v.intent(s.Intents[id])
	}
	for _, id := range sortedKeys(s.Dispatches) {
		v.dispatched(s.Dispatches[id])
	}
	return v
}
