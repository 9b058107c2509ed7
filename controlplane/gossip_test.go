package controlplane

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/writhq/writ/controlplane/internal/keyring"
	"github.com/writhq/writ/internal/freeport"
)

type countEvents struct{ joins, leaves, updates chan string }

func (c countEvents) NotifyJoin(n *memberlist.Node)   { c.joins <- n.Name }
func (c countEvents) NotifyLeave(n *memberlist.Node)  { c.leaves <- n.Name }
func (c countEvents) NotifyUpdate(n *memberlist.Node) { c.updates <- n.Name }

// TestGossipView: the view of who is alive holds this server from the start,
// a server that joins, its metadata as it changes, and not a server once it
// has left; every event still reaches the cluster's delegate.
func TestGossipView(t *testing.T) {
	kr, err := keyring.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ev := countEvents{make(chan string, 16), make(chan string, 16), make(chan string, 16)}
	addrA, addrB := freeport.MustLoopback(), freeport.MustLoopback()
	a, err := startGossip(ClusterConfig{GossipAddr: addrA}, memberMeta{V: 1, ID: "a"}, kr, log, ev)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	view := func(g *gossip) string { return fmt.Sprint(g.members()) }
	want := func(g *gossip, w string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); view(g) != w; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("members %s, want %s", view(g), w)
			}
		}
	}
	want(a, "[{1 a   0 false}]")
	b, err := startGossip(ClusterConfig{GossipAddr: addrB}, memberMeta{V: 1, ID: "b"}, kr, log, countEvents{make(chan string, 16), make(chan string, 16), make(chan string, 16)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ml.Join([]string{addrA}); err != nil {
		t.Fatal(err)
	}
	want(a, "[{1 a   0 false} {1 b   0 false}]")
	b.setState()
	want(a, "[{1 a   0 false} {1 b   0 true}]")
	b.close()
	want(a, "[{1 a   0 false}]")
	for name, c := range map[string]chan string{"join": ev.joins, "update": ev.updates, "leave": ev.leaves} {
		select {
		case <-c:
		default:
			t.Errorf("no %s event reached the delegate", name)
		}
	}
}
