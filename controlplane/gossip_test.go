package controlplane

import (
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/writhq/writ/controlplane/internal/keyring"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/freeport"
	"github.com/writhq/writ/internal/testtier"
)

type countEvents struct{ joins, leaves, updates chan string }

func (c countEvents) NotifyJoin(n *memberlist.Node)   { c.joins <- n.Name }
func (c countEvents) NotifyLeave(n *memberlist.Node)  { c.leaves <- n.Name }
func (c countEvents) NotifyUpdate(n *memberlist.Node) { c.updates <- n.Name }

// TestGossipView: the view of who is alive holds this server from the start,
// a server that joins, its metadata as it changes, and not a server once it
// has left; every event still reaches the cluster's delegate.
func TestGossipView(t *testing.T) {
	t.Parallel()
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
		eventually.NoError(t, "the members "+w, func() error {
			if got := view(g); got != w {
				return fmt.Errorf("members %s", got)
			}
			return nil
		})
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

// cutTransport is memberlist's network transport with a switch that drops
// everything this server sends: cut on both sides, a partition.
type cutTransport struct {
	*memberlist.NetTransport
	cut atomic.Bool
}

var errCut = errors.New("the link is cut")

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.cut.Load() {
		return time.Now(), nil // sent, and lost on the way
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *cutTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.cut.Load() {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *cutTransport) DialTimeout(addr string, d time.Duration) (net.Conn, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	return t.NetTransport.DialTimeout(addr, d)
}

func (t *cutTransport) DialAddressTimeout(a memberlist.Address, d time.Duration) (net.Conn, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	return t.NetTransport.DialAddressTimeout(a, d)
}

// TestGossipRejoin: two servers cut off each other long enough for
// memberlist to declare each dead to the other. While cut, each still
// finds the other's last metadata (a relay to a leader memberlist holds
// dead must still reach its API). Once healed, memberlist alone never
// probes a dead server again; rejoin brings both views back.
func TestGossipRejoin(t *testing.T) {
	testtier.Slow(t, "waits for memberlist's suspicion timeout")
	kr, err := keyring.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	start := func(id string) (*gossip, *cutTransport) {
		t.Helper()
		addr := freeport.MustLoopback()
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: p,
			Logger: stdlog.New(io.Discard, "", 0)})
		if err != nil {
			t.Fatal(err)
		}
		tr := &cutTransport{NetTransport: nt}
		ev := countEvents{make(chan string, 64), make(chan string, 64), make(chan string, 64)}
		g, err := startGossipOn(ClusterConfig{GossipAddr: addr}, memberMeta{V: 1, ID: id, API: "api-of-" + id}, kr, log, ev, tr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.close)
		return g, tr
	}
	a, ta := start("a")
	b, tb := start("b")
	alive := func(g *gossip, id string) bool {
		for _, m := range g.members() {
			if m.ID == id {
				return true
			}
		}
		return false
	}
	wait := func(what string, d time.Duration, ok func() bool, each func()) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (a sees %v, b sees %v)", what, d, a.members(), b.members())
			}
			if each != nil {
				each()
			}
		}
	}
	if _, err := b.ml.Join([]string{a.ml.LocalNode().Address()}); err != nil {
		t.Fatal(err)
	}
	wait("a and b see each other", 10*time.Second, func() bool { return alive(a, "b") && alive(b, "a") }, nil)
	ta.cut.Store(true)
	tb.cut.Store(true)
	wait("each declares the other dead", 60*time.Second, func() bool { return !alive(a, "b") && !alive(b, "a") }, nil)
	if m, ok := a.member("b"); !ok || m.API != "api-of-b" {
		t.Errorf("a's member(b) while b is held dead: %+v, %v; want b's last metadata", m, ok)
	}
	if _, ok := a.member("c"); ok {
		t.Error("a's member(c): found a server memberlist never saw")
	}
	// Healed at once, the news of each death still being gossiped would
	// reach the other, which refutes it; in a real partition it has long
	// been told (a few rounds of 200 ms) when the network heals.
	time.Sleep(3 * time.Second)
	ta.cut.Store(false)
	tb.cut.Store(false)
	var joins int
	rejoin := func() {
		if n, _ := a.rejoin([]string{"a", "b"}); n > 0 {
			joins++
		}
	}
	wait("rejoined, each sees the other", 30*time.Second, func() bool { return alive(a, "b") && alive(b, "a") }, rejoin)
	if joins == 0 {
		t.Error("the views healed without a rejoin: the test cut nothing")
	}
	if n, err := a.rejoin([]string{"a", "b"}); n != 0 || err != nil {
		t.Errorf("rejoin with every server alive: %d, %v; want 0, nil", n, err)
	}
}
