package fsm

import (
	"bytes"
	"testing"
)

// TestNodeKey: the key of an enrolled node, as Node has it, in a copy of its
// own; none for a node never enrolled or revoked.
func TestNodeKey(t *testing.T) {
	f, b := fleetFSM(t)
	n, ok := f.Reader().Node("n1")
	if !ok || len(n.Public) == 0 {
		t.Fatalf("the fleet has no node n1 with a key: %+v", n)
	}
	pub, ok := f.Reader().NodeKey("n1")
	if !ok || !bytes.Equal(pub, n.Public) {
		t.Fatalf("NodeKey(n1) = %x %v, want %x true", pub, ok, n.Public)
	}
	pub[0] ^= 0xff
	if again, _ := f.Reader().NodeKey("n1"); !bytes.Equal(again, n.Public) {
		t.Fatal("changing the returned key changed the node's")
	}
	if pub, ok := f.Reader().NodeKey("nobody"); ok || pub != nil {
		t.Fatalf("NodeKey of a node never enrolled: %x %v, want none", pub, ok)
	}
	apply(t, f, b, MsgNodeStatus, NodeStatus{At: t0, Node: "n1", Status: NodeRevoked})
	if pub, ok := f.Reader().NodeKey("n1"); ok || pub != nil {
		t.Fatalf("NodeKey of a revoked node: %x %v, want none", pub, ok)
	}
}
