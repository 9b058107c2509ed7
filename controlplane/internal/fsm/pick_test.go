package fsm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// scanPick is the scheduling rule as a pass over every node, without the
// index: an intent targeted at a node takes the best of the nodes of that id
// or name; any other takes, in the lowest load level holding an eligible node
// with a free slot, the first such from a place chosen by the intent's hash
// in the level's nodes (those ready for the tool with that load) by id.
func scanPick(f *FSM, in *Intent) (*Node, bool) {
	tool := f.state.Tools[in.Tool]
	var best *Node
	eligible := false
	if t := in.Target; t != nil && t.Node != "" {
		for _, id := range sortedKeys(f.state.Nodes) {
			n := f.state.Nodes[id]
			if !f.scheduler().eligible(n, in, tool) {
				continue
			}
			eligible = true
			if n.InFlight < n.Concurrency && (best == nil || targetBefore(in, n, best)) {
				best = n
			}
		}
		return best, eligible
	}
	levels := map[int][]string{}
	top := 0
	for _, id := range sortedKeys(f.state.Nodes) {
		n := f.state.Nodes[id]
		if n.Status == NodeReady && n.Tools[tool.Name] == tool.Hash && slices.Contains(n.Tiers, tool.Tier) {
			levels[n.InFlight] = append(levels[n.InFlight], id)
			top = max(top, n.InFlight)
		}
	}
	for k := 0; k <= top; k++ {
		l := levels[k]
		for j := range l {
			n := f.state.Nodes[l[(int(mix64(in.ID)%uint64(len(l)))+j)%len(l)]]
			if !f.scheduler().eligible(n, in, tool) {
				continue
			}
			eligible = true
			if n.InFlight < n.Concurrency {
				return n, true
			}
		}
	}
	return nil, eligible
}

// sameSched reports whether the scheduler's index is what a rebuild from
// the state makes.
func sameSched(t *testing.T, f *FSM) {
	t.Helper()
	dump := func(x *schedIndex) map[string][][]string {
		out := map[string][][]string{}
		for name, r := range x.rings {
			var levels [][]string
			if len(r.order) != len(r.levels) || !slices.IsSorted(r.order) {
				t.Fatalf("ring %s: loads %v do not list its levels %v", name, r.order, r.levels)
			}
			for _, k := range r.order {
				if len(r.levels[k]) == 0 {
					t.Fatalf("ring %s keeps an empty level %d", name, k)
				}
				for len(levels) <= k {
					levels = append(levels, nil)
				}
				levels[k] = slices.Clone(r.levels[k])
			}
			if len(levels) > 0 {
				out[name] = levels
			}
		}
		return out
	}
	if g, w := f.idx.sched, buildSched(f.state); !reflect.DeepEqual(g.listing, w.listing) || !reflect.DeepEqual(g.fresh, w.fresh) {
		t.Fatalf("the index of what nodes list drifted from the state:\n got %v %v\nwant %v %v", g.listing, g.fresh, w.listing, w.fresh)
	}
	if g, w := dump(f.idx.sched), dump(buildSched(f.state)); !reflect.DeepEqual(g, w) {
		t.Fatalf("the scheduler's index drifted from the state:\n got %v\nwant %v", g, w)
	}
}

// scanPossible is possible by a pass over every node: is there one not
// revoked, of the target's id or name if any, that never said hello or whose
// hello listed the tool and its tier with labels that fit?
func scanPossible(f *FSM, in *Intent) bool {
	tool := f.state.Tools[in.Tool]
	for _, n := range f.state.Nodes {
		t := in.Target
		if tool == nil || n.Status == NodeRevoked || (t != nil && t.Node != "" && t.Node != n.ID && t.Node != n.Name) {
			continue
		}
		if n.Concurrency == 0 {
			return true
		}
		_, listed := n.Tools[in.Tool]
		if listed && slices.Contains(n.Tiers, tool.Tier) && subset(tool.Selector, n.Labels) && (t == nil || subset(t.Labels, n.Labels)) {
			return true
		}
	}
	return false
}

// TestPickMatchesScan: through dispatches, results, queueing, drains,
// disconnections, revocations and tool changes, the index stays what the
// state says, and the scheduler picks what a pass over every node picks.
func TestPickMatchesScan(t *testing.T) {
	f, b := fleetFSM(t)
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"n1"}
	for i := range 40 {
		id := fmt.Sprintf("n%03d", i)
		ids = append(ids, id)
		enrollNode(b, id, 1+i%3)
		for _, l := range b.logs[len(b.logs)-3:] {
			f.Apply(l)
		}
	}
	// Some labels for selectors and targets.
	for i, id := range ids {
		f.state.Nodes[id].Labels = map[string]string{"zone": []string{"a", "b"}[i%2]}
	}
	targets := []*protocol.Target{nil, nil, nil, {Node: "n007"}, {Node: "n008.example"}, {Node: "nope"},
		{Labels: map[string]string{"zone": "b"}}, {Labels: map[string]string{"zone": "c"}}}
	at := t0
	for i := range 600 {
		at = at.Add(time.Second)
		check := func(in *Intent) {
			if got, want := f.scheduler().possible(in), scanPossible(f, in); got != want {
				t.Fatalf("step %d, intent %s target %+v: possible %v, a scan says %v", i, in.ID, in.Target, got, want)
			}
			want, wantOK := scanPick(f, in)
			got, gotOK := f.scheduler().pick(in)
			if gotOK != wantOK || (got == nil) != (want == nil) || (got != nil && got.ID != want.ID) {
				t.Fatalf("step %d, intent %s target %+v: pick %v %v, scan %v %v", i, in.ID, in.Target, got, gotOK, want, wantOK)
			}
		}
		check(&Intent{ID: fmt.Sprintf("probe-%d", i), Tool: "echo", Target: targets[rng.IntN(len(targets))]})
		switch i {
		case 300: // a node enrolled that has not said hello: it could run anything
			apply(t, f, b, MsgPutJoinToken, PutJoinToken{ID: "tok-fresh", Hash: "sha256:secret", ExpiresAt: t0.Add(time.Hour)})
			if r := apply(t, f, b, MsgEnroll, Enroll{At: at, TokenID: "tok-fresh", TokenHash: "sha256:secret", Node: "fresh", Name: "fresh.example", Public: make([]byte, 32)}); r.Err != nil {
				t.Fatal(r.Err)
			}
		case 450:
			apply(t, f, b, MsgNodeStatus, NodeStatus{At: at, Node: "fresh", Status: NodeRevoked})
		}
		switch r := rng.IntN(10); {
		case r < 5: // admit: dispatched or queued
			tgt := targets[rng.IntN(len(targets))]
			apply(t, f, b, MsgAdmit, admit(fmt.Sprintf("i%d", i), fmt.Sprintf("k%d", i), "p", at, func(a *Admit) { a.Target = tgt }))
		case r < 8: // a result for some open dispatch
			for _, d := range f.state.Dispatches {
				if d.Open {
					in := f.state.Intents[d.IntentID]
					apply(t, f, b, MsgResult, result(*in, protocol.StatusOK, at))
					break
				}
			}
		case r < 9: // a node goes, or comes back
			id := ids[rng.IntN(len(ids))]
			apply(t, f, b, MsgNodeSession, NodeSession{At: at, Node: id, Server: "s1", Connected: rng.IntN(2) == 0,
				Tiers: []string{"wasm"}, Tools: map[string]string{"echo": toolHash}, Concurrency: 1 + rng.IntN(3)})
		default: // drain, undrain, or the tool's hash changes and changes back
			switch rng.IntN(3) {
			case 0:
				apply(t, f, b, MsgNodeStatus, NodeStatus{At: at, Node: ids[rng.IntN(len(ids))], Status: NodeDraining})
			case 1:
				apply(t, f, b, MsgNodeStatus, NodeStatus{At: at, Node: ids[rng.IntN(len(ids))], Status: NodeReady})
			default:
				apply(t, f, b, MsgPutTool, PutTool{Name: "echo", Hash: "sha256:other", Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
				sameSched(t, f)
				apply(t, f, b, MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
			}
		}
		sameSched(t, f)
	}
	apply(t, f, b, MsgNodeStatus, NodeStatus{At: at, Node: "n005", Status: NodeRevoked})
	sameSched(t, f)
}

// TestPickSpreadsEqualLoads: idle nodes share intents roughly evenly.
func TestPickSpreadsEqualLoads(t *testing.T) {
	f, b := fleetFSM(t)
	for i := range 9 {
		enrollNode(b, fmt.Sprintf("m%d", i), 100)
	}
	for _, l := range b.logs[len(b.logs)-27:] {
		f.Apply(l)
	}
	count := map[string]int{}
	for i := range 10_000 {
		n, _ := f.scheduler().pick(&Intent{ID: fmt.Sprintf("int-%d", i), Tool: "echo"})
		count[n.ID]++
	}
	for id, c := range count {
		if c < 800 || c > 1200 {
			t.Errorf("node %s got %d of 10000 intents among 10 idle nodes: %v", id, c, count)
		}
	}
	if len(count) != 10 {
		t.Errorf("intents went to %d of 10 nodes: %v", len(count), count)
	}
}

// TestTargetByNameAfterRestore: the indexes of node names and of the
// scheduler are rebuilt from a snapshot.
func TestTargetByNameAfterRestore(t *testing.T) {
	f, _ := fleetFSM(t)
	g := restoreInto(t, f, newFSM(t))
	for _, target := range []*protocol.Target{{Node: "n1"}, {Node: "n1.example"}, nil} {
		in := &Intent{ID: "i", Tool: "echo", Target: target}
		if n, ok := g.scheduler().pick(in); !ok || n == nil || n.ID != "n1" {
			t.Fatalf("target %+v after a restore: %v %v", target, n, ok)
		}
	}
	sameSched(t, g)
}

// BenchmarkPick: scheduling an intent, targeted at one node or not, in a
// fleet of 10,000 idle nodes, beside the baseline of a fleet of one.
func BenchmarkPick(b *testing.B) {
	for _, size := range []int{1, 10_000} {
		f, lb := newFSM(b), &logBuilder{t: b}
		lb.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
		ids := make([]string, size)
		for i := range ids {
			ids[i] = fmt.Sprintf("node-%05d", i)
			enrollNode(lb, ids[i], 8)
		}
		for _, l := range lb.logs {
			f.Apply(l)
		}
		for _, targeted := range []bool{true, false} {
			b.Run(fmt.Sprintf("nodes=%d/targeted=%v", size, targeted), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					in := &Intent{ID: fmt.Sprintf("int-%d", i), Tool: "echo"}
					if targeted {
						in.Target = &protocol.Target{Node: ids[i%size]}
					}
					if n, _ := f.scheduler().pick(in); n == nil {
						b.Fatal("no node")
					}
				}
			})
		}
	}
}

// TestRingKeepsOnlyLoadedLevels: a node with thousands of dispatches in
// flight is one level of its tool's ring, so that a pick passes over the
// loads nodes have, not every load below theirs.
func TestRingKeepsOnlyLoadedLevels(t *testing.T) {
	f, b := fleetFSM(t)
	for i := range 3000 {
		id := fmt.Sprintf("int-%d", i)
		if r := apply(t, f, b, MsgAdmit, admit(id, id, "p", t0)); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	r := f.idx.sched.rings["echo"]
	if n := f.state.Nodes["n1"]; n.InFlight != 3000 || len(r.order) != 1 || r.order[0] != 3000 {
		t.Fatalf("node in flight %d; ring levels %v, want one at 3000", n.InFlight, r.order)
	}
	sameSched(t, f)
}
