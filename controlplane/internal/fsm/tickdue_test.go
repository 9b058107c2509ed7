package fsm

import (
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/raft"
)

// TestTickDueWhenATickChangesSomething: at every time of a grid over a day
// and more, a tick that would change the state beyond its clock and index is
// reported due (the leader never skips one that has work), and there are times
// with none due (an idle leader proposes no tick). The state holds every
// kind of timed work: intents waiting for approval and expiring, a consumed
// nonce, an open dispatch with its deadline, a lock with an end, an unused
// join token, idempotency entries and run counters.
func TestTickDueWhenATickChangesSomething(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 5})
	apply(t, f, b, MsgAdmit, admit("p", "kp", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	apply(t, f, b, MsgApprove, approve("p", "nonce", "deny", t0.Add(time.Minute)))
	apply(t, f, b, MsgAdmit, admit("w", "kw", "w", t0, func(a *Admit) { a.Decision.ApprovalRequired = true; a.RunID = "run-2" }))
	apply(t, f, b, MsgAdmit, admit("d", "kd", "d", t0.Add(2*time.Second)))
	apply(t, f, b, MsgPutJoinToken, PutJoinToken{ID: "unused", Hash: "sha256:u", ExpiresAt: t0.Add(2 * time.Hour)})
	apply(t, f, b, MsgPutLock, PutLock{At: t0.Add(3 * time.Second), Lock: Lock{ID: "lk", Tool: "other", Reason: "r", ExpiresAt: t0.Add(90 * time.Second)}})

	var times []time.Time
	for d := -time.Minute; d <= 30*time.Minute; d += 5 * time.Second {
		times = append(times, t0.Add(d))
	}
	for d := 30 * time.Minute; d <= 26*time.Hour; d += 5 * time.Minute {
		times = append(times, t0.Add(d))
	}
	// every applies a tick at each time, skip only when TickDue says one is
	// due: their states must stay the same but for the clock and index.
	every := replay(t, b.logs)
	skip := replay(t, b.logs)
	index := uint64(len(b.logs))
	tick := func(f *FSM, at time.Time) {
		data, err := Encode(MsgTick, Tick{At: at})
		if err != nil {
			t.Fatal(err)
		}
		f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data})
	}
	changes, idle := 0, 0
	for _, at := range times {
		index++ // both at the same index: an intent records the index that changed it
		before := comparable(t, every)
		tick(every, at)
		if !reflect.DeepEqual(before, comparable(t, every)) {
			changes++
		}
		if skip.Reader().TickDue(at) {
			tick(skip, at)
		} else {
			idle++
		}
		if !reflect.DeepEqual(comparable(t, every), comparable(t, skip)) {
			t.Fatalf("at %s: ticking only when TickDue reports work gives another state than ticking every time", at.Sub(t0))
		}
	}
	if changes < 5 || idle == 0 {
		t.Fatalf("%d ticks changed something, %d times none was due: want several and some", changes, idle)
	}
	t.Logf("%d times, %d ticks changed the state, %d not due", len(times), changes, idle)
}

// comparable is the encoded state without its index and clock.
func comparable(t *testing.T, f *FSM) map[string]any {
	t.Helper()
	enc, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(enc, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "index")
	delete(m, "clock")
	return m
}
