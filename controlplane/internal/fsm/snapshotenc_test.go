package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// servedState is a state of n completed intents as a server holds them after
// `writ bench load`: each with its canonical signed intent (512-byte params)
// and its node's canonical signed result, an idempotency entry and a receipt.
func servedState(n int) *State {
	s := newState()
	params := `{"msg":"` + strings.Repeat("x", 500) + `","n":[1,2.5,-3e-7],"u":"é\u2028<&>"}`
	hash := "sha256:" + strings.Repeat("0", 64)
	for i := range n {
		id := fmt.Sprintf("bench-%08d", i)
		raw := `{"expires_at":"2026-11-22T10:10:00Z","id":"` + id + `","idempotency_key":"` + id +
			`","issued_at":"2026-11-22T10:00:00Z","key_id":"orch-1","params":` + params + `,"payload_hash":"` + hash +
			`","principal":"bench","run_id":"bench","sig":"` + strings.Repeat("A", 43) + `=","target":{"node":"n1"},"tenant":"acme","tool":"echo","type":"writ.intent/v1"}`
		res := `{"captured_bytes":512,"captured_hash":"` + hash + `","dispatch_id":"dsp-` + id + `","exit_code":0,"finished_at":"2026-11-22T10:00:00.001Z","intent_id":"` + id +
			`","key_id":"n1","node":"n1","output_bytes":512,"output_hash":"` + hash + `","sandbox":"wasm","sig":"` + strings.Repeat("A", 86) +
			`==","started_at":"2026-11-22T10:00:00.000Z","status":"ok","truncated":false,"type":"writ.result/v2"}`
		receipt, at := uint64(i), t0.Add(time.Duration(i)*time.Millisecond)
		s.Intents[id] = &Intent{ID: id, Tenant: "acme", Principal: "bench", RunID: "bench", Tool: "echo", PayloadHash: hash,
			IdempotencyKey: id, Raw: jsontext.Value(raw), State: StateCompleted, AdmittedAt: at, ExpiresAt: at.Add(10 * time.Minute),
			UpdatedAt: at, Index: uint64(2 * i), Decision: Decision{Allow: true, PolicyHash: "sha256:p", Policies: []string{"p0"}},
			Receipt: &receipt, Target: &protocol.Target{Node: "n1"},
			Dispatch: &protocol.DispatchRef{ID: "dsp-" + id, Node: "n1", Fence: 3}, Result: jsontext.Value(res)}
		s.Idempotency["acme\x00"+id] = &IdemEntry{IntentID: id, PayloadHash: hash, At: at}
	}
	s.Runs["acme\x00bench"] = &Run{Used: int64(n), LastAt: t0}
	return s
}

// checkedState is the state encoded by an encoder that checks for duplicate
// member names, as snapshots were encoded before stateOptions.
func checkedState(s *State) ([]byte, error) { return json.Marshal(s, json.Deterministic(true)) }

// TestEncodeStateUnchecked: not looking for duplicate names changes no byte of
// a snapshot's state, for a served state and for the replay test's log of
// admissions, approvals and ticks; and a raw value with a duplicate name,
// which the checking encoder refuses, survives Snapshot and Restore.
func TestEncodeStateUnchecked(t *testing.T) {
	f, b := fleetFSM(t)
	f.Apply(b.add(MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 50}))
	f.Apply(b.add(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000}))
	for i := range 60 {
		at := t0.Add(time.Duration(i) * 7 * time.Minute)
		id := fmt.Sprintf("int-%03d", i)
		f.Apply(b.add(MsgAdmit, admit(id, fmt.Sprintf("k%d", i%40), fmt.Sprint(i%3), at, func(a *Admit) {
			a.Decision.ApprovalRequired = i%4 == 0
		})))
		if i%4 == 0 {
			f.Apply(b.add(MsgApprove, approve(id, fmt.Sprintf("nonce-%d", i), "approve", at.Add(time.Minute))))
		}
		if i%10 == 9 {
			f.Apply(b.add(MsgTick, Tick{At: at.Add(3 * time.Minute)}))
		}
	}
	for name, s := range map[string]*State{"replayed": f.state, "served": servedState(300)} {
		t.Run(name, func(t *testing.T) {
			want, err := checkedState(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeState(s)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("unchecked encoding differs: %d bytes, want %d", len(got), len(want))
			}
		})
	}

	dup := newFSM(t)
	dup.state = servedState(2)
	dup.state.Intents["bench-00000001"].Result = jsontext.Value(`{"a":1,"a":2}`)
	if _, err := checkedState(dup.state); err == nil {
		t.Fatal("the checking encoder accepted a duplicate name")
	}
	want, err := dup.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := restoreInto(t, dup, newFSM(t)).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("restored state differs:\n got %.300s\nwant %.300s", got, want)
	}
}

// BenchmarkEncodeState: encoding a served state of 2,000 intents for a
// snapshot, beside the checking encoder (baseline) in the same run.
func BenchmarkEncodeState(b *testing.B) {
	s := servedState(2000)
	for _, c := range []struct {
		name   string
		encode func(*State) ([]byte, error)
	}{{"baseline=checked", checkedState}, {"snapshot", encodeState}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := c.encode(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/intent")
		})
	}
}
