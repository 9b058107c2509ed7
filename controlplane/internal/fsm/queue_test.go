package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// receiptOf decodes the receipt of a final intent.
func receiptOf(t *testing.T, l Ledger, in Intent) *protocol.Receipt {
	t.Helper()
	if in.Receipt == nil {
		t.Fatalf("%s (%s) has no receipt", in.ID, in.State)
	}
	leaf, err := l.Leaf(int64(*in.Receipt))
	if err != nil {
		t.Fatal(err)
	}
	r, err := protocol.DecodeReceipt(leaf, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestQueuedIntentPastExpiryIsNeverDispatched: an intent queued behind a
// busy node whose expiry passes before a slot frees (no tick in between)
// ends expired with a receipt when the slot frees; the slot goes to the next
// intent that may still run, and no dispatch is ever made for it.
func TestQueuedIntentPastExpiryIsNeverDispatched(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	for _, e := range b.logs {
		f.Apply(e)
	}
	apply(t, f, b, MsgAdmit, admit("busy", "k1", "p1", t0))
	apply(t, f, b, MsgAdmit, admit("short", "k2", "p2", t0, func(a *Admit) { a.ExpiresAt = t0.Add(30 * time.Second) }))
	apply(t, f, b, MsgAdmit, admit("long", "k3", "p3", t0))
	if in := state(t, f, "short"); in.State != StateQueued || in.Dispatch != nil {
		t.Fatalf("behind a busy node: %+v, want queued", in)
	}
	busy := state(t, f, "busy")
	apply(t, f, b, MsgResult, result(busy, protocol.StatusOK, t0.Add(40*time.Second)))
	short := state(t, f, "short")
	if short.State != StateExpired || short.Error == nil || short.Error.Code != protocol.CodeExpired || short.Dispatch != nil {
		t.Fatalf("queued past its expiry: %+v, want expired and never dispatched", short)
	}
	if r := receiptOf(t, l, short); r.Outcome != protocol.OutcomeExpired || r.Dispatch != nil {
		t.Fatalf("receipt of the expired intent: %+v", r)
	}
	if long := state(t, f, "long"); long.State != StateDispatched || long.Dispatch == nil {
		t.Fatalf("the next intent did not get the freed slot: %+v", long)
	}
	for _, d := range f.Reader().OpenDispatches("n1") {
		if d.IntentID == "short" || !d.ExpiresAt.After(d.IssuedAt) {
			t.Fatalf("dispatch %+v: an expired intent dispatched, or one that cannot be signed", d)
		}
	}
	if n, _ := f.Reader().Node("n1"); n.InFlight != 1 {
		t.Fatalf("in flight %d, want 1 (long's)", n.InFlight)
	}
}

// waitFSM has the echo tool and node n1 enrolled but never connected.
func waitFSM(t *testing.T, cfg Config) (*FSM, *logBuilder, Ledger) {
	t.Helper()
	l := memLedger(t)
	f, err := New(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	b := &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	b.add(MsgPutTool, PutTool{Name: "other", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	b.add(MsgPutJoinToken, PutJoinToken{ID: "tok-n1", Hash: "sha256:secret", ExpiresAt: t0.Add(time.Hour), Labels: map[string]string{"zone": "a"}})
	b.add(MsgEnroll, Enroll{At: t0, TokenID: "tok-n1", TokenHash: "sha256:secret", Node: "n1", Name: "n1.example", Public: make([]byte, 32)})
	for _, e := range b.logs {
		if r, _ := f.Apply(e).(Result); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return f, b, l
}

func connect(at time.Time, node string) NodeSession {
	return NodeSession{At: at, Node: node, Server: "s1", Connected: true, Tiers: []string{"wasm"},
		Tools: map[string]string{"echo": toolHash}, Concurrency: 2}
}

// TestIntentWaitsForANode: with no node connected, an intent waits queued
// and is dispatched when its node connects; its wait survives a snapshot.
func TestIntentWaitsForANode(t *testing.T) {
	f, b, _ := waitFSM(t, DefaultConfig())
	apply(t, f, b, MsgAdmit, admit("early", "k1", "p", t0))
	apply(t, f, b, MsgAdmit, admit("named", "k2", "p", t0, func(a *Admit) { a.Target = &protocol.Target{Node: "n1.example"} }))
	for _, id := range []string{"early", "named"} {
		if in := state(t, f, id); in.State != StateQueued || !in.WaitUntil.Equal(t0.Add(30*time.Second)) || in.Receipt != nil {
			t.Fatalf("%s before any node connected: %+v, want queued until t0+30s", id, in)
		}
	}
	g := restoreInto(t, f, newFSM(t)) // the wait is state: a restored replica keeps it
	apply(t, f, b, MsgTick, Tick{At: t0.Add(29 * time.Second)})
	apply(t, f, b, MsgNodeSession, connect(t0.Add(29*time.Second), "n1"))
	for _, id := range []string{"early", "named"} {
		if in := state(t, f, id); in.State != StateDispatched || in.Dispatch == nil || in.Dispatch.Node != "n1" || !in.WaitUntil.IsZero() {
			t.Fatalf("%s once n1 connected: %+v", id, in)
		}
	}
	for _, e := range b.logs[len(b.logs)-2:] {
		g.Apply(e)
	}
	if in := state(t, g, "early"); in.State != StateDispatched {
		t.Fatalf("restored replica: %+v", in)
	}
}

// TestNodeWaitEnds: an intent whose node never comes ends rejected
// no_eligible_node by the first tick at or past node_wait (not before),
// with a receipt, giving its idempotency key back; one whose expiry comes
// first ends expired; one no registered node could ever run is rejected at
// once; with node_wait 0 nothing waits.
func TestNodeWaitEnds(t *testing.T) {
	f, b, l := waitFSM(t, DefaultConfig())
	apply(t, f, b, MsgAdmit, admit("never", "k1", "p", t0, func(a *Admit) { a.Target = &protocol.Target{Labels: map[string]string{"zone": "a"}} }))
	apply(t, f, b, MsgAdmit, admit("brief", "k2", "p", t0, func(a *Admit) { a.ExpiresAt = t0.Add(10 * time.Second) }))
	impossible := map[string]func(*Admit){
		"no-such-node":      func(a *Admit) { a.Target = &protocol.Target{Node: "nowhere"} },
		"revoked-node":      func(a *Admit) { a.Target = &protocol.Target{Node: "n2"} },
		"tool-not-on-nodes": func(a *Admit) { a.Tool = "other" },
		"labels":            func(a *Admit) { a.Target = &protocol.Target{Labels: map[string]string{"zone": "b"}} },
	}
	// n2 said what it may run (not "other"); n1 connects once, then goes.
	b.add(MsgPutJoinToken, PutJoinToken{ID: "tok-n2", Hash: "sha256:secret", ExpiresAt: t0.Add(time.Hour), Labels: map[string]string{"zone": "a"}})
	b.add(MsgEnroll, Enroll{At: t0, TokenID: "tok-n2", TokenHash: "sha256:secret", Node: "n2", Public: make([]byte, 32)})
	b.add(MsgNodeStatus, NodeStatus{At: t0, Node: "n2", Status: NodeRevoked})
	b.add(MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1", Connected: true, Tiers: []string{"wasm"},
		Tools: map[string]string{"echo": "sha256:older"}, Concurrency: 1, Labels: map[string]string{"zone": "a"}})
	b.add(MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1"})
	for _, e := range b.logs[len(b.logs)-5:] {
		if r, _ := f.Apply(e).(Result); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	for name, mod := range impossible {
		apply(t, f, b, MsgAdmit, admit(name, name, "p", t0, mod))
		if in := state(t, f, name); in.State != StateRejected || in.Error.Code != protocol.CodeNoEligibleNode || !in.Unbound || in.Receipt == nil {
			t.Errorf("%s: %+v, want rejected no_eligible_node at once", name, in)
		}
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(10 * time.Second)})
	if in := state(t, f, "brief"); in.State != StateExpired || in.Error.Code != protocol.CodeExpired {
		t.Fatalf("expiry before node_wait: %+v, want expired", in)
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(30*time.Second - time.Nanosecond)})
	if in := state(t, f, "never"); in.State != StateQueued {
		t.Fatalf("before node_wait: %+v, want queued", in)
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(31 * time.Second)})
	never := state(t, f, "never")
	if never.State != StateRejected || never.Error.Code != protocol.CodeNoEligibleNode || never.Dispatch != nil || !never.Unbound {
		t.Fatalf("after node_wait: %+v, want rejected no_eligible_node", never)
	}
	if r := receiptOf(t, l, never); r.Outcome != protocol.OutcomeRejected || r.Error == nil || r.Error.Code != protocol.CodeNoEligibleNode {
		t.Fatalf("receipt after node_wait: %+v", r)
	}
	if len(f.state.Queue) != 0 {
		t.Fatalf("queue after every wait ended: %v", f.state.Queue)
	}
	// The key is free again: the same intent, retried once a node is there, runs.
	apply(t, f, b, MsgNodeSession, connect(t0.Add(40*time.Second), "n1"))
	r := apply(t, f, b, MsgAdmit, admit("never-again", "k1", "p", t0.Add(40*time.Second)))
	if r.Err != nil || r.Duplicate || r.IntentID != "never-again" {
		t.Fatalf("retry with the key of the rejected intent: %+v", r)
	}
	if in := state(t, f, "never-again"); in.State != StateDispatched {
		t.Fatalf("retry: %+v", in)
	}

	cfg := DefaultConfig()
	cfg.NodeWait = 0
	g, gb, _ := waitFSM(t, cfg)
	apply(t, g, gb, MsgAdmit, admit("now", "k1", "p", t0))
	if in := state(t, g, "now"); in.State != StateRejected || in.Error.Code != protocol.CodeNoEligibleNode {
		t.Fatalf("node_wait 0: %+v, want rejected at once", in)
	}
}

// TestNodeLostWhileQueued: an intent queued behind a busy node, whose node
// then goes, waits node_wait from then for one to come back.
func TestNodeLostWhileQueued(t *testing.T) {
	f, b, _ := waitFSM(t, DefaultConfig())
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1", Connected: true, Tiers: []string{"wasm"},
		Tools: map[string]string{"echo": toolHash}, Concurrency: 1})
	apply(t, f, b, MsgAdmit, admit("a", "ka", "pa", t0))
	apply(t, f, b, MsgAdmit, admit("b", "kb", "pb", t0))
	if in := state(t, f, "b"); in.State != StateQueued || !in.WaitUntil.IsZero() {
		t.Fatalf("behind a busy node: %+v", in)
	}
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0.Add(time.Minute), Node: "n1", Server: "s1"})
	apply(t, f, b, MsgResult, result(state(t, f, "a"), protocol.StatusOK, t0.Add(time.Minute)))
	if in := state(t, f, "b"); in.State != StateQueued || !in.WaitUntil.Equal(t0.Add(time.Minute+30*time.Second)) {
		t.Fatalf("its node gone: %+v, want a wait from then", in)
	}
	apply(t, f, b, MsgNodeSession, connect(t0.Add(time.Minute+10*time.Second), "n1"))
	if in := state(t, f, "b"); in.State != StateDispatched {
		t.Fatalf("its node back: %+v", in)
	}
}

// TestAbandonFreesTheSlot: a dispatch its server cannot sign, given up,
// frees its node's slot at once for the next queued intent and ends its
// intent with a receipt: rejected dispatch_unsignable, or expired when its
// expiry has come. Giving it up again, or after a result, changes nothing.
func TestAbandonFreesTheSlot(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	for _, e := range b.logs {
		f.Apply(e)
	}
	apply(t, f, b, MsgAdmit, admit("a", "ka", "pa", t0))
	apply(t, f, b, MsgAdmit, admit("b", "kb", "pb", t0, func(a *Admit) { a.ExpiresAt = t0.Add(20 * time.Second) }))
	apply(t, f, b, MsgAdmit, admit("c", "kc", "pc", t0))
	a := state(t, f, "a")
	if r := apply(t, f, b, MsgAbandon, Abandon{At: t0.Add(time.Second), DispatchID: a.Dispatch.ID, Server: "s1"}); r.Err != nil {
		t.Fatal(r.Err)
	}
	a = state(t, f, "a")
	if a.State != StateRejected || a.Error.Code != protocol.CodeUnsignable {
		t.Fatalf("abandoned: %+v", a)
	}
	if r := receiptOf(t, l, a); r.Outcome != protocol.OutcomeRejected || r.Error == nil || r.Error.Code != protocol.CodeUnsignable {
		t.Fatalf("receipt of the abandoned intent: %+v", r)
	}
	bi := state(t, f, "b")
	if bi.State != StateDispatched {
		t.Fatalf("the freed slot: %+v, want b dispatched", bi)
	}
	if n, _ := f.Reader().Node("n1"); n.InFlight != 1 {
		t.Fatalf("in flight %d, want 1", n.InFlight)
	}
	apply(t, f, b, MsgAbandon, Abandon{At: t0.Add(30 * time.Second), DispatchID: bi.Dispatch.ID, Server: "s1"})
	if bi = state(t, f, "b"); bi.State != StateExpired || bi.Error.Code != protocol.CodeExpired || bi.Receipt == nil {
		t.Fatalf("abandoned past its expiry: %+v, want expired", bi)
	}
	c := state(t, f, "c")
	apply(t, f, b, MsgResult, result(c, protocol.StatusOK, t0.Add(31*time.Second)))
	size := l.Size()
	for _, id := range []string{a.Dispatch.ID, c.Dispatch.ID} {
		if r := apply(t, f, b, MsgAbandon, Abandon{At: t0.Add(32 * time.Second), DispatchID: id, Server: "s1"}); r.Err != nil || !r.Duplicate {
			t.Fatalf("abandoning a closed dispatch: %+v", r)
		}
	}
	if c = state(t, f, "c"); c.State != StateCompleted || l.Size() != size {
		t.Fatalf("after abandoning closed dispatches: %+v, %d receipts (was %d)", c, l.Size(), size)
	}
	if n, _ := f.Reader().Node("n1"); n.InFlight != 0 {
		t.Fatalf("in flight %d, want 0", n.InFlight)
	}
}

// TestQueuedForARevokedNode: intents queued behind a busy node end
// no_eligible_node as soon as it is revoked (no node could ever run them),
// and begin a wait for a node as soon as it disconnects.
func TestQueuedForARevokedNode(t *testing.T) {
	for _, c := range []struct {
		name  string
		cmd   any
		t     MsgType
		state string
	}{
		{"revoked", NodeStatus{At: t0.Add(time.Second), Node: "n1", Status: NodeRevoked}, MsgNodeStatus, StateRejected},
		{"disconnected", NodeSession{At: t0.Add(time.Second), Node: "n1", Server: "s1"}, MsgNodeSession, StateQueued},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, b, _ := waitFSM(t, DefaultConfig())
			apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1", Connected: true, Tiers: []string{"wasm"},
				Tools: map[string]string{"echo": toolHash}, Concurrency: 1})
			apply(t, f, b, MsgAdmit, admit("a", "ka", "pa", t0))
			apply(t, f, b, MsgAdmit, admit("b", "kb", "pb", t0))
			apply(t, f, b, c.t, c.cmd)
			in := state(t, f, "b")
			if in.State != c.state {
				t.Fatalf("queued intent: %+v, want %s", in, c.state)
			}
			if c.state == StateQueued && !in.WaitUntil.Equal(t0.Add(31*time.Second)) {
				t.Fatalf("queued intent: wait until %s, want t0+31s", in.WaitUntil)
			}
			if c.state == StateRejected && in.Error.Code != protocol.CodeNoEligibleNode {
				t.Fatalf("queued intent: %+v", in.Error)
			}
		})
	}
}

// TestEndOfAnOlderSession: a server's "session lost" names the session; when
// the node has reconnected to the same server since (its new hello applied
// first), the end of the old session leaves it ready. The end of its
// current session, or one naming none, marks it down.
func TestEndOfAnOlderSession(t *testing.T) {
	f, b, _ := waitFSM(t, DefaultConfig())
	hello := func(session string) NodeSession {
		c := connect(t0, "n1")
		c.Session = session
		return c
	}
	lost := func(session string) NodeSession {
		return NodeSession{At: t0, Node: "n1", Server: "s1", Session: session}
	}
	for i, step := range []struct {
		cmd  NodeSession
		want string
	}{
		{hello("one"), NodeReady},
		{hello("two"), NodeReady},
		{lost("one"), NodeReady}, // the old session's end, applied after the new hello
		{lost("two"), NodeDown},
		{hello("three"), NodeReady},
		{lost(""), NodeDown}, // an entry naming no session: any of s1's
	} {
		if r := apply(t, f, b, MsgNodeSession, step.cmd); r.Err != nil {
			t.Fatal(r.Err)
		}
		if n, _ := f.Reader().Node("n1"); n.Status != step.want {
			t.Fatalf("step %d (%+v): node %s, want %s", i, step.cmd, n.Status, step.want)
		}
	}
}

// BenchmarkNoEligibleNode: deciding that no node could ever run an intent
// (its tool in no node's allowlist: the whole fleet is looked at), in fleets
// of 1 and 10,000 nodes, beside the baseline of a pick in the same fleet.
func BenchmarkNoEligibleNode(b *testing.B) {
	for _, size := range []int{1, 10_000} {
		f, lb := newFSM(b), &logBuilder{t: b}
		lb.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
		lb.add(MsgPutTool, PutTool{Name: "other", Hash: toolHash, Spec: []byte(`{"name":"other"}`), Tier: "wasm", TimeoutMS: 1000})
		for i := range size {
			enrollNode(lb, fmt.Sprintf("node-%05d", i), 8)
		}
		for _, l := range lb.logs {
			f.Apply(l)
		}
		b.Run(fmt.Sprintf("nodes=%d/baseline=pick", size), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if n, _ := f.scheduler().pick(&Intent{ID: fmt.Sprintf("int-%d", i), Tool: "echo"}); n == nil {
					b.Fatal("no node")
				}
			}
		})
		b.Run(fmt.Sprintf("nodes=%d/possible", size), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				in := &Intent{ID: fmt.Sprintf("int-%d", i), Tool: "other"}
				if f.scheduler().anyEligible(in) || f.scheduler().possible(in) {
					b.Fatal("a node may run it")
				}
			}
		})
	}
}
