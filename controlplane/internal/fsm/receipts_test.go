package fsm

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

func memLedger(t *testing.T) *ledger.Log {
	t.Helper()
	l, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func withLedger(t *testing.T, l Ledger) *FSM {
	t.Helper()
	f, err := New(DefaultConfig(), l)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// receiptLog makes a log with outcomes of every kind.
func receiptLog(t *testing.T) *logBuilder {
	b := fleetLog(t)
	b.add(MsgAdmit, admit("ok", "k1", "p", t0))
	b.add(MsgAdmit, admit("no", "k2", "p", t0, func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} }))
	b.add(MsgAdmit, admit("bad", "k3", "p", t0, func(a *Admit) {
		a.Decision = Decision{Error: &protocol.ErrorBody{Code: "params_invalid", Message: "x"}}
	}))
	b.add(MsgAdmit, admit("wait", "k4", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	b.add(MsgAdmit, admit("deny", "k5", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	b.add(MsgApprove, approve("deny", "n1", protocol.DecisionDeny, t0.Add(time.Minute)))
	b.add(MsgTick, Tick{At: t0.Add(11 * time.Minute)})
	return b
}

func TestReceiptsForFinalOutcomes(t *testing.T) {
	l := memLedger(t)
	f := withLedger(t, l)
	b := receiptLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	want := map[string]string{"no": "denied", "bad": "rejected", "deny": "denied", "wait": "expired", "ok": "unknown"}
	if l.Size() != int64(len(want)) {
		t.Fatalf("ledger holds %d receipts, want %d", l.Size(), len(want))
	}
	for id, outcome := range want {
		in := state(t, f, id)
		if in.Receipt == nil {
			t.Fatalf("%s has no receipt", id)
		}
		leaf, _ := l.Leaf(int64(*in.Receipt))
		r, err := protocol.DecodeReceipt(leaf, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.IntentID != id || r.Outcome != outcome || r.Index != *in.Receipt {
			t.Errorf("%s: receipt %+v, want outcome %s", id, r, outcome)
		}
	}
	// A fresh replica makes the same leaves.
	l2 := memLedger(t)
	g := withLedger(t, l2)
	for _, e := range b.logs {
		g.Apply(e)
	}
	r1, _ := l.Root(l.Size())
	r2, _ := l2.Root(l2.Size())
	if r1 != r2 {
		t.Fatal("two replicas built different receipt logs")
	}
	// A restarted replica replays over the receipts it already holds.
	h := withLedger(t, l)
	for _, e := range b.logs {
		h.Apply(e)
	}
	if l.Size() != int64(len(want)) {
		t.Fatalf("replay over a durable ledger appended again: %d receipts", l.Size())
	}
}

func TestReceiptLogDisagreementStops(t *testing.T) {
	l := memLedger(t)
	if _, err := l.Append([]byte(`{"not":"this receipt"}`)); err != nil {
		t.Fatal(err)
	}
	f := withLedger(t, l)
	b := &logBuilder{t: t}
	defer func() {
		if recover() == nil {
			t.Fatal("a ledger holding another receipt was accepted")
		}
	}()
	f.Apply(b.add(MsgAdmit, admit("no", "k", "p", t0, func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} })))
}

func TestSnapshotCarriesReceipts(t *testing.T) {
	l := memLedger(t)
	f := withLedger(t, l)
	for _, e := range receiptLog(t).logs {
		f.Apply(e)
	}
	empty := memLedger(t)
	g := restoreInto(t, f, withLedger(t, empty))
	if empty.Size() != l.Size() {
		t.Fatalf("restored ledger has %d receipts, want %d", empty.Size(), l.Size())
	}
	a, _ := l.Root(l.Size())
	b, _ := empty.Root(empty.Size())
	if a != b {
		t.Fatal("restored ledger differs")
	}
	want, _ := f.Encode()
	got, _ := g.Encode()
	if !bytes.Equal(got, want) {
		t.Fatal("restored state differs")
	}
}

func TestCheckpointsThroughTheLog(t *testing.T) {
	signer, vkey, err := ledger.NewSigner("writ.test/fsm", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.Config{VerifierKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	f := withLedger(t, l)
	b := receiptLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	root, _ := l.Root(l.Size())
	note, err := ledger.SignCheckpoint(ledger.Checkpoint{Origin: signer.Name(), Size: l.Size(), Root: root}, signer)
	if err != nil {
		t.Fatal(err)
	}
	woken := f.Reader().CheckpointChanged()
	f.Apply(b.add(MsgPutCheckpoint, PutCheckpoint{Note: note}))
	select {
	case <-woken:
	default:
		t.Error("a checkpoint did not wake its watchers")
	}
	v, _ := ledger.NewVerifier(vkey)
	rp, err := l.ProveReceipt(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.VerifyReceipt(v, rp); err != nil {
		t.Fatalf("receipt 0 does not verify: %v", err)
	}
	// Replayed after a restart, an older checkpoint changes nothing.
	f.Apply(&raft.Log{Index: b.logs[len(b.logs)-1].Index, Type: raft.LogCommand, Data: b.logs[len(b.logs)-1].Data})
}

// TestSnapshotKeepsRawBytes: canonical raw values (which may hold <, > and &)
// come back from a snapshot byte for byte, as a replica that applied the log
// holds them.
func TestSnapshotKeepsRawBytes(t *testing.T) {
	f := withLedger(t, nil)
	b := &logBuilder{t: t}
	raw := []byte(`{"params":{"q":"a<b && c>d"},"sig":"x"}`)
	f.Apply(b.add(MsgAdmit, admit("html", "k", "p", t0, func(a *Admit) { a.Intent = raw })))
	g := restoreInto(t, f, withLedger(t, nil))
	if got := state(t, g, "html").Raw; !bytes.Equal(got, raw) {
		t.Fatalf("restored raw intent: got %s, want %s", got, raw)
	}
}

// TestRefusedAttemptsHaveReceipts: an authenticated attempt refused for an
// idempotency conflict gets a rejected receipt, once however often it is sent.
func TestRefusedAttemptsHaveReceipts(t *testing.T) {
	l := memLedger(t)
	f := withLedger(t, l)
	b := fleetLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	apply(t, f, b, MsgAdmit, admit("int-1", "k1", "p", t0))
	size := l.Size()
	for range 3 { // the same conflicting attempt, sent three times
		if r := apply(t, f, b, MsgAdmit, admit("int-2", "k1", "other", t0.Add(time.Second))); r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
			t.Fatalf("same key, other payload: %+v", r)
		}
	}
	if l.Size() != size+1 {
		t.Fatalf("%d receipts for one conflicting attempt sent three times, want 1", l.Size()-size)
	}
	in := state(t, f, "int-2")
	if in.State != StateRejected || in.Receipt == nil || !in.Unbound {
		t.Fatalf("the refused attempt: %+v", in)
	}
	leaf, _ := l.Leaf(int64(*in.Receipt))
	r, err := protocol.DecodeReceipt(leaf, 0)
	if err != nil || r.Outcome != protocol.OutcomeRejected || r.Error == nil || r.Error.Code != protocol.CodeIdempotencyConflict || r.IntentID != "int-2" {
		t.Fatalf("its receipt: %+v %v", r, err)
	}
	// Another attempt under a taken intent id: a receipt, nothing stored.
	if r := apply(t, f, b, MsgAdmit, admit("int-1", "k9", "p", t0.Add(2*time.Second))); r.Err == nil || r.Err.Code != protocol.CodeIdempotencyConflict {
		t.Fatalf("a taken intent id: %+v", r)
	}
	if l.Size() != size+2 {
		t.Fatalf("no receipt for an attempt under a taken intent id")
	}
	// The original is untouched and still the key's.
	if in := state(t, f, "int-1"); in.State == StateRejected {
		t.Fatalf("the original: %+v", in)
	}
}

// indexAtAppend is a ledger that records what the FSM's Index says while
// receipts are being appended.
type indexAtAppend struct {
	*ledger.Log
	f    *FSM
	seen []uint64
}

func (l *indexAtAppend) Append(leaves ...[]byte) (int64, error) {
	l.seen = append(l.seen, l.f.Reader().Index())
	return l.Log.Append(leaves...)
}

// A reader who waited for an index finds the receipts of every entry up to
// it in the ledger: Index counts a batch's entries only once their receipts
// are appended.
func TestIndexWaitsForReceipts(t *testing.T) {
	l := &indexAtAppend{Log: memLedger(t)}
	f := withLedger(t, l)
	l.f = f
	b := receiptLog(t)
	last := b.logs[len(b.logs)-1].Index
	f.ApplyBatch(b.logs)
	if len(l.seen) != 1 || l.seen[0] != 0 {
		t.Fatalf("Index while the batch's receipts were appended: %v, want [0]", l.seen)
	}
	if f.Reader().Index() != last || l.Size() != 5 {
		t.Fatalf("after the batch: index %d, %d receipts; want %d and 5", f.Reader().Index(), l.Size(), last)
	}
}
