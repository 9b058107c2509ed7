package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// The dashboard's views are checked against a scan of the whole state: the
// answer a query would give with no index at all.

func oracleList(f *FSM, q IntentFilter) []string {
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
	var ids []string
	for _, in := range hits {
		ids = append(ids, in.ID)
	}
	return ids
}

func oracleMinutes(f *FSM, since time.Time) map[time.Time]map[string]int {
	out := map[time.Time]map[string]int{}
	for _, in := range f.state.Intents {
		if m := in.UpdatedAt.Truncate(time.Minute); !m.Before(since.Truncate(time.Minute)) {
			if out[m] == nil {
				out[m] = map[string]int{}
			}
			out[m][in.State]++
		}
	}
	return out
}

func oracleNode(f *FSM, node string, limit int) []string {
	var ds []*Dispatch
	for _, d := range f.state.Dispatches {
		if d.Node == node {
			ds = append(ds, d)
		}
	}
	slices.SortFunc(ds, func(a, b *Dispatch) int { return cmp.Compare(b.Fence, a.Fence) })
	var out []string
	for _, d := range ds[:min(limit, len(ds))] {
		out = append(out, d.IntentID)
	}
	return out
}

// pages reads every page of q, limit intents at a time.
func pages(t *testing.T, f *FSM, q IntentFilter) []string {
	t.Helper()
	var ids []string
	for n := 0; ; n++ {
		if n > 10_000 {
			t.Fatal("the pages never end")
		}
		list, next := f.Reader().ListIntents(q)
		for _, in := range list {
			ids = append(ids, in.ID)
		}
		if next == nil {
			return ids
		}
		q.After = next
	}
}

func checkViews(t *testing.T, f *FSM, when string) {
	t.Helper()
	now := f.state.Clock
	filters := []IntentFilter{
		{}, {State: StatePendingApproval}, {State: StateCompleted}, {Tool: "echo"},
		{Principal: "bot-1"}, {Since: now.Add(-90 * time.Minute)}, {Until: now.Add(-30 * time.Minute)},
		{Since: now.Add(-3 * time.Hour), Until: now.Add(-time.Hour), State: StateUnknown},
		{Tenant: "acme"}, {Tenant: "acme", State: StateCompleted}, {Tenant: "acme", Until: now.Add(-30 * time.Minute)},
		{Tenant: "acme", State: StatePendingApproval}, {Tenant: "acm"}, {Tenant: "acmf"}, {Run: "run-1"}, {Run: "none"},
	}
	for _, q := range filters {
		want := oracleList(f, q)
		for _, limit := range []int{0, 1, 7, 1000} {
			q.Limit = limit
			if got := pages(t, f, q); !slices.Equal(got, want) {
				t.Fatalf("%s: intents %+v by pages of %d:\n got %v\nwant %v", when, q, limit, got, want)
			}
		}
	}
	pending := len(oracleList(f, IntentFilter{State: StatePendingApproval}))
	if got := f.Reader().PendingApprovals(); got != pending {
		t.Fatalf("%s: %d pending approvals, want %d", when, got, pending)
	}
	for _, since := range []time.Time{now.Add(-15 * time.Minute), now.Add(-time.Hour)} {
		got, want := f.Reader().StatesPerMinute(since), oracleMinutes(f, since)
		if !maps.EqualFunc(got, want, maps.Equal) {
			t.Fatalf("%s: per minute since %s:\n got %v\nwant %v", when, since, got, want)
		}
	}
	for _, node := range []string{"n1", "n2", "n3"} {
		if got, want := f.Reader().NodeDispatches(node, 5), oracleNode(f, node, 5); !slices.Equal(got, want) {
			t.Fatalf("%s: recent dispatches of %s: got %v want %v", when, node, got, want)
		}
	}
}

// TestViewsMatchAScan drives intents through every state — approvals and
// denials, results, silent nodes and late results, expiry, pruning — and
// after each step compares every dashboard query with a scan of the state,
// then does the same on a replica restored from a snapshot.
func TestViewsMatchAScan(t *testing.T) {
	f, b := fleetFSM(t)
	for _, l := range []*logBuilder{b} {
		enrollNode(l, "n2", 3)
		enrollNode(l, "n3", 1)
	}
	for _, l := range b.logs[len(b.logs)-6:] {
		f.Apply(l)
	}
	step := func(mt MsgType, cmd any) { f.Apply(b.add(mt, cmd)) }
	at, maxPending := t0, 0
	for i := range 300 {
		at = at.Add(47 * time.Second)
		id := fmt.Sprintf("int-%03d", i)
		step(MsgAdmit, admit(id, fmt.Sprintf("k%d", i), fmt.Sprint(i), at, func(a *Admit) {
			a.Principal = fmt.Sprintf("bot-%d", i%3)
			a.Decision.ApprovalRequired = i%5 == 0
			a.Decision.Allow = i%11 != 0
			if i%7 == 0 {
				a.Target = &protocol.Target{Node: []string{"n1", "n2", "n3"}[i%3]}
			}
			if i%13 == 1 {
				a.Target = &protocol.Target{Node: "n9"} // no such node: rejected
			}
		}))
		in, _ := f.Reader().Intent(id)
		switch {
		case in.State == StatePendingApproval && i%10 == 0:
			step(MsgApprove, approve(id, fmt.Sprintf("nonce-%d", i), "approve", at.Add(time.Second)))
		case in.State == StatePendingApproval && i%15 == 5:
			step(MsgApprove, approve(id, fmt.Sprintf("nonce-%d", i), "deny", at.Add(time.Second)))
		}
		if in, _ = f.Reader().Intent(id); in.Dispatch != nil && i%4 != 3 {
			status := []string{protocol.StatusOK, protocol.StatusError, protocol.StatusTimeout}[i%3]
			step(MsgResult, result(in, status, at.Add(2*time.Second)))
		}
		if i%9 == 0 {
			step(MsgTick, Tick{At: at.Add(time.Second)})
		}
		maxPending = max(maxPending, f.Reader().PendingApprovals())
		if i%25 == 0 {
			checkViews(t, f, fmt.Sprintf("after intent %d", i))
		}
	}
	// Silent nodes end unknown; their late results supersede.
	step(MsgTick, Tick{At: at.Add(10 * time.Minute)})
	for _, in := range f.state.Intents {
		if in.State == StateUnknown && in.Dispatch != nil && len(in.Result) == 0 && in.ID < "int-100" {
			step(MsgResult, result(*in, protocol.StatusOK, at.Add(11*time.Minute)))
		}
	}
	checkViews(t, f, "after the late results")
	states := map[string]int{}
	for _, in := range f.state.Intents {
		states[in.State]++
	}
	if maxPending == 0 {
		t.Error("no intent ever waited for an approval: the test does not cover it")
	}
	for _, s := range []string{StateCompleted, StateFailed, StateDenied, StateUnknown, StateRejected, StateExpired} {
		if states[s] == 0 {
			t.Errorf("no intent ended %s: the test does not cover it (%v)", s, states)
		}
	}

	// A replica restored midway holds the same views.
	restored := restoreInto(t, f, newFSM(t))
	checkViews(t, restored, "restored")

	// A day later everything is pruned, from the views too.
	for _, g := range []*FSM{f, restored} {
		g.Apply(b.add(MsgTick, Tick{At: at.Add(25 * time.Hour)}))
		checkViews(t, g, "after pruning")
		if len(g.state.Intents) != 0 || g.idx.views.admitted.Len() != 0 || g.idx.views.byTenant.Len() != 0 || len(g.idx.views.counted) != 0 {
			t.Fatalf("after pruning: %d intents, %d in the view, %d counted", len(g.state.Intents), g.idx.views.admitted.Len(), len(g.idx.views.counted))
		}
		b.logs = b.logs[:len(b.logs)-1]
	}
}

// TestListIntentsScanLimit: a filter that matches little over a large state
// examines a bounded number of intents per page and still finds every match
// across pages.
func TestListIntentsScanLimit(t *testing.T) {
	defer func(n int) { scanLimit = n }(scanLimit)
	scanLimit = 50
	f, b := fleetFSM(t)
	for i := range 400 {
		f.Apply(b.add(MsgAdmit, admit(fmt.Sprintf("int-%03d", i), fmt.Sprintf("k%d", i), "p", t0.Add(time.Duration(i)*time.Second), func(a *Admit) {
			if i%97 == 0 && i < 300 {
				a.Principal = "rare"
			}
		})))
	}
	q := IntentFilter{Principal: "rare", Limit: 10}
	list, next := f.Reader().ListIntents(q)
	if len(list) != 0 || next == nil {
		t.Fatalf("first page: %d intents, next %v; want none found within the first 50 and a cursor", len(list), next)
	}
	want := oracleList(f, IntentFilter{Principal: "rare"})
	if got := pages(t, f, q); !slices.Equal(got, want) || len(want) != 4 {
		t.Fatalf("rare intents across pages: %v, want %v", got, want)
	}
}

// TestListIntentsByTenant: one tenant's list reads that tenant's index, so
// that its few intents among many of another tenant's come in one page
// however small the scan limit, with no other tenant's.
func TestListIntentsByTenant(t *testing.T) {
	defer func(n int) { scanLimit = n }(scanLimit)
	scanLimit = 50
	f, b := fleetFSM(t)
	var small []string
	for i := range 400 {
		id := fmt.Sprintf("int-%03d", i)
		f.Apply(b.add(MsgAdmit, admit(id, fmt.Sprintf("k%d", i), "p", t0.Add(time.Duration(i)*time.Second), func(a *Admit) {
			if i%97 == 0 {
				a.Tenant = "small"
			}
		})))
		if i%97 == 0 {
			small = slices.Insert(small, 0, id)
		}
	}
	for _, tenant := range []string{"smal", "smalll", "small\x00"} {
		if list, next := f.Reader().ListIntents(IntentFilter{Tenant: tenant, Limit: 10}); len(list) != 0 || next != nil {
			t.Fatalf("tenant %q: %d intents, next %v; want none", tenant, len(list), next)
		}
	}
	list, next := f.Reader().ListIntents(IntentFilter{Tenant: "small", Limit: 10})
	var got []string
	for _, in := range list {
		got = append(got, in.ID)
	}
	if !slices.Equal(got, small) || next != nil {
		t.Fatalf("tenant small: %v next %v, want %v in one page", got, next, small)
	}
	if got := pages(t, f, IntentFilter{Tenant: "small", Limit: 2}); !slices.Equal(got, small) {
		t.Fatalf("tenant small by pages of 2: %v, want %v", got, small)
	}
}
