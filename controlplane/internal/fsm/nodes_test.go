package fsm

import (
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

func result(in Intent, status string, at time.Time) *RecordResult {
	raw := []byte(`{"dispatch_id":"` + in.Dispatch.ID + `","status":"` + status + `"}`)
	return &RecordResult{At: at, DispatchID: in.Dispatch.ID, IntentID: in.ID, Node: in.Dispatch.Node, Status: status, Result: raw}
}

func TestEnrollmentTokenIsOneTime(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutJoinToken, PutJoinToken{ID: "t2", Hash: "sha256:s2", ExpiresAt: t0.Add(time.Hour)})
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0, TokenID: "t2", TokenHash: "sha256:wrong", Node: "n2"}); r.Err == nil || r.Err.Code != protocol.CodeInvalidToken {
		t.Fatalf("wrong secret: %+v", r)
	}
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0, TokenID: "t2", TokenHash: "sha256:s2", Node: "n1"}); r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
		t.Fatalf("enrolling under a taken node id: %+v", r)
	}
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0, TokenID: "t2", TokenHash: "sha256:s2", Node: "n2"}); r.Err != nil {
		t.Fatalf("refused attempts must not use the token up: %+v", r.Err)
	}
	apply(t, f, b, MsgPutJoinToken, PutJoinToken{ID: "t3", Hash: "sha256:s3", ExpiresAt: t0.Add(time.Hour)})
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0, TokenID: "t3", TokenHash: "sha256:s3", Node: "n3"}); r.Err != nil {
		t.Fatalf("enroll: %+v", r.Err)
	}
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0, TokenID: "t3", TokenHash: "sha256:s3", Node: "n4"}); r.Err == nil || r.Err.Code != protocol.CodeInvalidToken {
		t.Fatalf("second use of a token: %+v", r)
	}
	apply(t, f, b, MsgPutJoinToken, PutJoinToken{ID: "t5", Hash: "sha256:s5", ExpiresAt: t0.Add(time.Minute)})
	if r := apply(t, f, b, MsgEnroll, Enroll{At: t0.Add(time.Minute), TokenID: "t5", TokenHash: "sha256:s5", Node: "n5"}); r.Err == nil {
		t.Fatal("an expired token enrolled a node")
	}
	if n, ok := f.Reader().Node("n3"); !ok || n.Status != NodeDown {
		t.Fatalf("enrolled node: %+v, %v; want down until its session begins", n, ok)
	}
}

func TestDispatchAndResult(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgAdmit, admit("i1", "k1", "p", t0))
	in := state(t, f, "i1")
	if in.State != StateDispatched || in.Dispatch == nil || in.Dispatch.Node != "n1" || in.Dispatch.Fence != b.logs[len(b.logs)-1].Index {
		t.Fatalf("after admission: %+v", in)
	}
	d, ok := f.Reader().Dispatch(in.Dispatch.ID)
	if !ok || !d.Open || d.Nonce == "" || !d.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("dispatch record: %+v", d)
	}
	if n, _ := f.Reader().Node("n1"); n.InFlight != 1 {
		t.Fatalf("in flight: %d", n.InFlight)
	}
	res := result(in, protocol.StatusOK, t0.Add(time.Second))
	if r := apply(t, f, b, MsgResult, res); r.Err != nil {
		t.Fatal(r.Err)
	}
	if in := state(t, f, "i1"); in.State != StateCompleted || string(in.Result) != string(res.Result) {
		t.Fatalf("after the result: %+v", in)
	}
	if r := apply(t, f, b, MsgResult, res); r.Err != nil || !r.Duplicate {
		t.Fatalf("the same result again: %+v, want a duplicate", r)
	}
	other := result(in, protocol.StatusError, t0.Add(time.Second))
	if r := apply(t, f, b, MsgResult, other); r.Err == nil || r.Err.Code != protocol.CodeResultConflict {
		t.Fatalf("another result: %+v", r)
	}
	// The node's unknown after its real result (it crashed between sending
	// the result and committing it, so its journal says started): refused,
	// and the recorded result stands.
	unknown := result(in, protocol.StatusUnknown, t0.Add(2*time.Second))
	if r := apply(t, f, b, MsgResult, unknown); r.Err == nil || r.Err.Code != protocol.CodeResultConflict {
		t.Fatalf("an unknown after the result: %+v", r)
	}
	if in := state(t, f, "i1"); in.State != StateCompleted || string(in.Result) != string(res.Result) || in.Superseding {
		t.Fatalf("after an unknown that came after the result: %+v", in)
	}
	wrong := result(in, protocol.StatusOK, t0)
	wrong.Node = "n9"
	if r := apply(t, f, b, MsgResult, wrong); r.Err == nil || r.Err.Code != protocol.CodeWrongNode {
		t.Fatalf("a result from another node: %+v", r)
	}
	if n, _ := f.Reader().Node("n1"); n.InFlight != 0 {
		t.Fatalf("in flight after the result: %d", n.InFlight)
	}
}

func TestSilentNodeEndsUnknownAndLateResultSupersedes(t *testing.T) {
	l := memLedger(t)
	f := withLedger(t, l)
	b := fleetLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	apply(t, f, b, MsgAdmit, admit("i1", "k1", "p", t0))
	in := state(t, f, "i1")
	d, _ := f.Reader().Dispatch(in.Dispatch.ID)
	apply(t, f, b, MsgTick, Tick{At: d.Deadline.Add(-time.Nanosecond)})
	if s := state(t, f, "i1").State; s != StateDispatched {
		t.Fatalf("before the deadline: %s", s)
	}
	apply(t, f, b, MsgTick, Tick{At: d.Deadline})
	in = state(t, f, "i1")
	if in.State != StateUnknown || in.Error.Code != protocol.CodeNodeSilent || in.Receipt == nil {
		t.Fatalf("at the deadline: %+v", in)
	}
	if r := apply(t, f, b, MsgResult, result(in, protocol.StatusOK, d.Deadline.Add(time.Second))); r.Err != nil {
		t.Fatal(r.Err)
	}
	in = state(t, f, "i1")
	if in.State != StateUnknown || in.SupersededBy == nil || *in.SupersededBy != *in.Receipt+1 {
		t.Fatalf("after a late result: %+v", in)
	}
	leaf, _ := l.Leaf(int64(*in.SupersededBy))
	r, err := protocol.DecodeReceipt(leaf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != protocol.OutcomeCompleted || r.Supersedes == nil || *r.Supersedes != *in.Receipt || r.Dispatch == nil || r.Result == nil {
		t.Fatalf("superseding receipt: %+v", r)
	}
	if l.Size() != 2 {
		t.Fatalf("ledger size %d, want the unknown receipt and the superseding one", l.Size())
	}
}

func TestConcurrencyLimitQueues(t *testing.T) {
	f, b := newFSM(t), &logBuilder{t: t}
	apply(t, f, b, MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 1)
	enrollNode(b, "n2", 1)
	for _, l := range b.logs[1:] {
		f.Apply(l)
	}
	for _, id := range []string{"a", "b", "c"} {
		apply(t, f, b, MsgAdmit, admit(id, "k"+id, id, t0))
	}
	a, bb, c := state(t, f, "a"), state(t, f, "b"), state(t, f, "c")
	if a.Dispatch == nil || bb.Dispatch == nil || a.Dispatch.Node == bb.Dispatch.Node {
		t.Fatalf("two nodes of one slot each: %+v %+v", a.Dispatch, bb.Dispatch)
	}
	if c.State != StateQueued || c.Dispatch != nil || !c.WaitUntil.IsZero() {
		t.Fatalf("third intent: %+v, want queued for a slot", c)
	}
	apply(t, f, b, MsgResult, result(a, protocol.StatusOK, t0.Add(time.Second)))
	if c := state(t, f, "c"); c.Dispatch == nil || c.Dispatch.Node != a.Dispatch.Node {
		t.Fatalf("queued intent after a slot freed: %+v", c.Dispatch)
	}
}

func TestNoEligibleNode(t *testing.T) {
	f, b := fleetFSM(t)
	cases := map[string]func(*Admit){
		"target node": func(a *Admit) { a.Target = &protocol.Target{Node: "elsewhere"} },
		"labels":      func(a *Admit) { a.Target = &protocol.Target{Labels: map[string]string{"zone": "b"}} },
		"other tool":  func(a *Admit) { a.Tool = "other" },
	}
	for name, mod := range cases {
		apply(t, f, b, MsgAdmit, admit(name, name, "p", t0, mod))
		if in := state(t, f, name); in.State != StateRejected || in.Error.Code != protocol.CodeNoEligibleNode || !in.Unbound {
			t.Errorf("%s: %+v", name, in)
		}
	}
	apply(t, f, b, MsgAdmit, admit("byname", "byname", "p", t0, func(a *Admit) {
		a.Target = &protocol.Target{Node: "n1.example", Labels: map[string]string{"zone": "a"}}
	}))
	if in := state(t, f, "byname"); in.Dispatch == nil {
		t.Errorf("target by node name and labels: %+v", in)
	}
	// A draining node may be undrained: the intent waits node_wait for it,
	// then ends no_eligible_node.
	apply(t, f, b, MsgNodeStatus, NodeStatus{At: t0, Node: "n1", Status: NodeDraining})
	apply(t, f, b, MsgAdmit, admit("drained", "drained", "p", t0))
	if in := state(t, f, "drained"); in.State != StateQueued || in.Dispatch != nil {
		t.Errorf("a draining node was given work: %+v", in)
	}
	apply(t, f, b, MsgTick, Tick{At: t0.Add(DefaultConfig().NodeWait)})
	if in := state(t, f, "drained"); in.State != StateRejected || in.Error.Code != protocol.CodeNoEligibleNode || in.Dispatch != nil {
		t.Errorf("after node_wait with the only node draining: %+v", in)
	}
}

func TestNodeSessionsAndRevocation(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgAdmit, admit("i1", "k1", "p", t0))
	// s2 takes the session over; s1's late "lost" must not mark it down.
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s2", Connected: true, Tiers: []string{"wasm"},
		Tools: map[string]string{"echo": toolHash}, Concurrency: 4})
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1"})
	if n, _ := f.Reader().Node("n1"); n.Status != NodeReady || n.Server != "s2" || n.InFlight != 1 {
		t.Fatalf("after a takeover: %+v", n)
	}
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s2"})
	if n, _ := f.Reader().Node("n1"); n.Status != NodeDown {
		t.Fatalf("after its server lost it: %+v", n)
	}
	apply(t, f, b, MsgNodeStatus, NodeStatus{At: t0, Node: "n1", Status: NodeRevoked})
	if r := apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1", Connected: true}); r.Err == nil || r.Err.Code != protocol.CodeNodeRevoked {
		t.Fatalf("a revoked node reconnected: %+v", r)
	}
	if r := apply(t, f, b, MsgNodeStatus, NodeStatus{At: t0, Node: "n1", Status: NodeReady}); r.Err == nil {
		t.Fatal("a revoked node was made ready again")
	}
	in := state(t, f, "i1")
	if r := apply(t, f, b, MsgResult, result(in, protocol.StatusOK, t0)); r.Err == nil || r.Err.Code != protocol.CodeNodeRevoked {
		t.Fatalf("a revoked node's result: %+v", r)
	}
}

// TestNodeLabels: a node's own labels join its token's, which win on the
// same key, and both select it.
func TestNodeLabels(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s1", Connected: true, OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: map[string]string{"echo": toolHash}, Concurrency: 4,
		Labels: map[string]string{"zone": "b", "gpu": "yes"}})
	n, _ := f.Reader().Node("n1")
	if n.Labels["zone"] != "a" || n.Labels["gpu"] != "yes" || len(n.Labels) != 2 || n.TokenLabels["zone"] != "a" {
		t.Fatalf("labels %v (token's %v): want the token's zone=a and the node's gpu=yes", n.Labels, n.TokenLabels)
	}
	apply(t, f, b, MsgAdmit, admit("gpu", "gpu", "p", t0, func(a *Admit) {
		a.Target = &protocol.Target{Labels: map[string]string{"gpu": "yes", "zone": "a"}}
	}))
	if in := state(t, f, "gpu"); in.Dispatch == nil {
		t.Errorf("selected by its own and its token's labels: %+v", in)
	}
	apply(t, f, b, MsgAdmit, admit("zone-b", "zone-b", "p", t0, func(a *Admit) {
		a.Target = &protocol.Target{Labels: map[string]string{"zone": "b"}}
	}))
	if in := state(t, f, "zone-b"); in.State != StateRejected {
		t.Errorf("the node overrode its token's label: %+v", in)
	}
	// A later session without them drops the node's own labels, never the token's.
	apply(t, f, b, MsgNodeSession, NodeSession{At: t0, Node: "n1", Server: "s2", Connected: true, OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: map[string]string{"echo": toolHash}, Concurrency: 4})
	if n, _ := f.Reader().Node("n1"); len(n.Labels) != 1 || n.Labels["zone"] != "a" {
		t.Fatalf("labels after a session without its own: %v", n.Labels)
	}
}
