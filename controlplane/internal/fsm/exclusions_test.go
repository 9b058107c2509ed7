package fsm

import (
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

// TestExclusions: each ready node is named with why it did not take the
// intent, in id order and bounded; nodes that are not ready are counted.
func TestExclusions(t *testing.T) {
	f := newFSM(t)
	s := f.state
	s.Tools["echo"] = &Tool{Name: "echo", Hash: "sha256:aaaaaaaaaaaaaaaaaaaa", Tier: "bwrap", Selector: map[string]string{"zone": "eu"}}
	s.Intents["i1"] = &Intent{ID: "i1", Tool: "echo", Target: &protocol.Target{Labels: map[string]string{"gpu": "yes"}}}
	s.Intents["i2"] = &Intent{ID: "i2", Tool: "nope"}
	ready := func(id string, mod func(*Node)) {
		n := &Node{ID: id, Status: NodeReady, Tiers: []string{"wasm", "bwrap"}, Concurrency: 2,
			Tools: map[string]string{"echo": "sha256:aaaaaaaaaaaaaaaaaaaa"}, Labels: map[string]string{"zone": "eu", "gpu": "yes"}}
		mod(n)
		s.Nodes[id] = n
	}
	ready("n1", func(n *Node) { delete(n.Tools, "echo") })
	ready("n2", func(n *Node) { n.Tools["echo"] = "sha256:bbbbbbbbbbbbbbbbbbbb" })
	ready("n3", func(n *Node) { n.Tiers = []string{"wasm"} })
	ready("n4", func(n *Node) { n.Labels = map[string]string{"gpu": "yes"} })
	ready("n5", func(n *Node) { n.Labels = map[string]string{"zone": "eu"} })
	ready("n6", func(n *Node) { n.InFlight = 2 })
	s.Nodes["n7"] = &Node{ID: "n7", Status: NodeDown}
	s.Nodes["n8"] = &Node{ID: "n8", Status: NodeDraining}
	got := f.Reader().Exclusions("i1")
	for _, want := range []string{
		"6 ready: n1: tool echo is not in its allowlist",
		"n2: its manifest of echo differs from the registered one (hash bbbbbbbbbbbb, registered aaaaaaaaaaaa)",
		"n3: tier bwrap is not available there",
		"n4: its labels do not fit the tool's node_selector",
		"n5: its labels do not fit the intent's target",
		"n6: at capacity (2 of 2 running)",
		"(2 not ready: down, draining or revoked)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Exclusions = %q\nwant it to contain %q", got, want)
		}
	}
	for i := range 20 {
		ready("z"+string(rune('a'+i)), func(n *Node) { delete(n.Tools, "echo") })
	}
	if got := f.Reader().Exclusions("i1"); !strings.Contains(got, "26 ready: ") || !strings.HasSuffix(got, "; zb: tool echo is not in its allowlist; and 18 more (2 not ready: down, draining or revoked)") || strings.Contains(got, "zc") {
		t.Errorf("with 26 ready nodes: %q, want %d named and the rest counted", got, maxExclusions)
	}
	if got := f.Reader().Exclusions("i2"); got != "" {
		t.Errorf("an intent of an unknown tool: %q, want nothing", got)
	}
	if got := f.Reader().Exclusions("none"); got != "" {
		t.Errorf("an unknown intent: %q", got)
	}
}
