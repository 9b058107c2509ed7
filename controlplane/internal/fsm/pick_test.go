package fsm

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"testing"

	"github.com/writhq/writ/protocol"
)

// TestSpreadIsFNV1a keeps the scheduler's hash what it was: replicas of
// different versions replaying one log must pick the same nodes.
func TestSpreadIsFNV1a(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"int-1", "node-a"}, {"intent-é", "n"}} {
		h := fnv.New64a()
		h.Write([]byte(c[0] + "\x00" + c[1]))
		if got := spread(c[0], c[1]); got != h.Sum64() {
			t.Errorf("spread(%q, %q) = %x, FNV-1a %x", c[0], c[1], got, h.Sum64())
		}
	}
}

// sortedPick is the scheduler as it was: a scan of every node in id order,
// the first of the lowest rank winning.
func sortedPick(f *FSM, in *Intent) (*Node, bool) {
	tool := f.state.Tools[in.Tool]
	var best *Node
	var bestRank uint64
	eligible := false
	for _, id := range sortedKeys(f.state.Nodes) {
		n := f.state.Nodes[id]
		if !f.eligible(n, in, tool) {
			continue
		}
		eligible = true
		if n.InFlight >= n.Concurrency {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(in.ID + "\x00" + n.ID))
		rank := uint64(n.InFlight)<<40 | h.Sum64()>>24
		if best == nil || rank < bestRank {
			best, bestRank = n, rank
		}
	}
	return best, eligible
}

// TestPickMatchesSortedScan: the scheduler reads the node map in any order,
// and a targeted intent only its node, yet picks what the sorted scan of
// every node picks.
func TestPickMatchesSortedScan(t *testing.T) {
	f, b := fleetFSM(t)
	for i := range 200 {
		enrollNode(b, fmt.Sprintf("n%03d", i), 1+i%3)
	}
	for _, l := range b.logs[len(b.logs)-600:] {
		f.Apply(l)
	}
	// Some nodes busy, full, draining or down.
	for i, id := range sortedKeys(f.state.Nodes) {
		n := f.state.Nodes[id]
		n.InFlight = i % 4
		switch i % 17 {
		case 3:
			n.Status = NodeDraining
		case 5:
			n.Status = NodeDown
		}
	}
	names := []string{"", "n007", "n008.example", "n005", "nope", "n1"}
	for i := range 500 {
		in := &Intent{ID: fmt.Sprintf("int-%d", i), Tool: "echo"}
		if target := names[i%len(names)]; target != "" {
			in.Target = &protocol.Target{Node: target}
		}
		want, wantOK := sortedPick(f, in)
		got, gotOK := f.pick(in)
		if gotOK != wantOK || (got == nil) != (want == nil) || (got != nil && got.ID != want.ID) {
			t.Fatalf("intent %s target %+v: pick %v %v, sorted scan %v %v", in.ID, in.Target, got, gotOK, want, wantOK)
		}
	}
}

// TestTargetByNameAfterRestore: the index of node names is rebuilt from a
// snapshot.
func TestTargetByNameAfterRestore(t *testing.T) {
	f, _ := fleetFSM(t)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"n1", "n1.example"} {
		in := &Intent{ID: "i", Tool: "echo", Target: &protocol.Target{Node: target}}
		if n, ok := g.pick(in); !ok || n == nil || n.ID != "n1" {
			t.Fatalf("target %q after a restore: %v %v", target, n, ok)
		}
	}
}

// BenchmarkPickTargeted: scheduling an intent at one node of a large fleet
// costs what it costs in a small one (the baseline: a fleet of one).
func BenchmarkPickTargeted(b *testing.B) {
	for _, size := range []int{1, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
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
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				in := &Intent{ID: "int", Tool: "echo", Target: &protocol.Target{Node: ids[i%size]}}
				if n, _ := f.pick(in); n == nil {
					b.Fatal("no node")
				}
			}
		})
	}
}
