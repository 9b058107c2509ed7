package fsm

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

const toolHash = "sha256:t"

// fleetLog starts a log with the echo tool and one ready node that may run
// it, with room for many dispatches at once.
func fleetLog(t testing.TB) *logBuilder {
	b := &logBuilder{t: t}
	b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
	enrollNode(b, "n1", 10_000)
	return b
}

// enrollNode adds the entries that enroll a node and connect it, ready for
// the echo tool.
func enrollNode(b *logBuilder, id string, concurrency int) {
	b.add(MsgPutJoinToken, PutJoinToken{ID: "tok-" + id, Hash: "sha256:secret", ExpiresAt: t0.Add(time.Hour), Labels: map[string]string{"zone": "a"}})
	b.add(MsgEnroll, Enroll{At: t0, TokenID: "tok-" + id, TokenHash: "sha256:secret", Node: id, Name: id + ".example", Public: make([]byte, 32)})
	b.add(MsgNodeSession, NodeSession{At: t0, Node: id, Server: "s1", Connected: true, OS: "linux", Arch: "amd64",
		Tiers: []string{"wasm"}, Tools: map[string]string{"echo": toolHash}, Concurrency: concurrency})
}

// fleetFSM returns an FSM that has applied fleetLog, and the log.
func fleetFSM(t testing.TB) (*FSM, *logBuilder) {
	t.Helper()
	f, b := newFSM(t), fleetLog(t)
	for _, l := range b.logs {
		if r, _ := f.Apply(l).(Result); r.Err != nil {
			t.Fatalf("fleet entry %d: %+v", l.Index, r.Err)
		}
	}
	return f, b
}

// TestNodeDispatchesNewestFirst: the dashboard's recent dispatches of a node
// are the newest limit, newest first, and none for limit 0.
func TestNodeDispatchesNewestFirst(t *testing.T) {
	f, b := fleetFSM(t)
	var ids []string
	for i := 0; i < 30; i++ {
		id := fmt.Sprintf("int-%02d", i)
		if r := apply(t, f, b, MsgAdmit, admit(id, id, "p", t0)); r.Err != nil {
			t.Fatalf("admit %s: %+v", id, r.Err)
		}
		ids = append(ids, id)
	}
	if got := f.Reader().NodeDispatches("n1", 0); len(got) != 0 {
		t.Errorf("limit 0: got %v, want none", got)
	}
	for _, limit := range []int{1, 5, 30, 100} {
		got := f.Reader().NodeDispatches("n1", limit)
		var want []string
		for i := len(ids) - 1; i >= 0 && len(want) < limit; i-- {
			want = append(want, ids[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want %v", limit, got, want)
		}
	}
	if got := f.Reader().NodeDispatches("nobody", 5); len(got) != 0 {
		t.Errorf("unknown node: got %v, want none", got)
	}
}
