package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/varint"
	"github.com/writhq/writ/protocol"
)

// group adds one group entry of the commands to the log.
func (b *logBuilder) group(cmds ...groupCmd) *raft.Log {
	b.t.Helper()
	var enc [][]byte
	for _, c := range cmds {
		e, err := Encode(c.t, c.cmd)
		if err != nil {
			b.t.Fatal(err)
		}
		enc = append(enc, e)
	}
	data, err := EncodeGroup(enc)
	if err != nil {
		b.t.Fatal(err)
	}
	l := &raft.Log{Index: uint64(len(b.logs) + 1), Type: raft.LogCommand, Data: data}
	b.logs = append(b.logs, l)
	return l
}

type groupCmd struct {
	t   MsgType
	cmd any
}

func admits(cmds ...*Admit) []groupCmd {
	var out []groupCmd
	for _, c := range cmds {
		out = append(out, groupCmd{MsgAdmit, c})
	}
	return out
}

func applyGroup(t *testing.T, f *FSM, b *logBuilder, cmds ...groupCmd) []Result {
	t.Helper()
	res, ok := f.Apply(b.group(cmds...)).([]Result)
	if !ok || len(res) != len(cmds) {
		t.Fatalf("a group of %d answered %v", len(cmds), res)
	}
	return res
}

// TestGroupIdempotencyAndBudget: within one group, commands see each other
// as across entries — a repeated key is a duplicate of the first, another
// payload under it a conflict, and of three intents racing for the last
// unit of a run's budget exactly one, the first, wins it.
func TestGroupIdempotencyAndBudget(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 3})
	apply(t, f, b, MsgAdmit, admit("a0", "a0", "p", t0))
	apply(t, f, b, MsgAdmit, admit("a1", "a1", "p", t0))
	res := applyGroup(t, f, b, admits(
		admit("k", "same", "p", t0),
		admit("k", "same", "p", t0),           // the same attempt again
		admit("k-other", "same", "other", t0), // the key with another payload
		admit("last-1", "last-1", "p", t0),    // "k" took the last unit
		admit("last-2", "last-2", "p", t0),    // and none is left for this one either
		admit("other-run", "o", "p", t0, func(a *Admit) { a.RunID = "run-2" }),
	)...)
	want := []Result{
		{IntentID: "k"},
		{IntentID: "k", Duplicate: true},
		{IntentID: "k-other", Err: &protocol.ErrorBody{Code: protocol.CodeIdempotencyConflict, Message: `idempotency key "same" was used for other params`}},
		{IntentID: "last-1"},
		{IntentID: "last-2"},
		{IntentID: "other-run"},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("got %+v,\nwant %+v", res, want)
	}
	for id, st := range map[string]string{"k": StateDispatched, "k-other": StateRejected, "last-1": StateRejected, "last-2": StateRejected, "other-run": StateDispatched} {
		if got := state(t, f, id).State; got != st {
			t.Errorf("%s: got %s, want %s", id, got, st)
		}
	}
	if e := state(t, f, "last-1").Error; e == nil || e.Code != protocol.CodeBudgetExhausted {
		t.Errorf("last-1: got %+v, want budget_exhausted", e)
	}

	// Three intents for the last unit, in one group: exactly the first wins.
	f, b = fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 1})
	applyGroup(t, f, b, admits(admit("x", "x", "p", t0), admit("y", "y", "p", t0), admit("z", "z", "p", t0))...)
	var won []string
	for _, id := range []string{"x", "y", "z"} {
		if state(t, f, id).State == StateDispatched {
			won = append(won, id)
		}
	}
	if fmt.Sprint(won) != "[x]" {
		t.Errorf("the last unit went to %v, want [x]", won)
	}
}

// TestGroupAsSeparateEntries: a group gives every command the result, and
// the ledger the receipts, that the same commands as entries of their own
// give.
func TestGroupAsSeparateEntries(t *testing.T) {
	cmds := []groupCmd{
		{MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 2}},
		{MsgAdmit, admit("ok", "k1", "p", t0)},
		{MsgAdmit, admit("no", "k2", "p", t0, func(a *Admit) { a.Decision = Decision{PolicyHash: "sha256:p"} })},
		{MsgAdmit, admit("bad", "k3", "p", t0, func(a *Admit) {
			a.Decision = Decision{Error: &protocol.ErrorBody{Code: "params_invalid", Message: "x"}}
		})},
		{MsgAdmit, admit("ok2", "k4", "p", t0.Add(time.Second))},
		{MsgAdmit, admit("over", "k5", "p", t0.Add(2*time.Second))},
		{MsgAdmit, admit("ok", "k1", "p", t0)},
		{MsgNoop, "xxxx"},
	}
	lone, grouped := memLedger(t), memLedger(t)
	fa, fb := withLedger(t, lone), withLedger(t, grouped)
	ba, bb := fleetLog(t), fleetLog(t)
	for _, l := range ba.logs {
		fa.Apply(l)
		fb.Apply(l)
	}
	var want []Result
	for _, c := range cmds {
		r, _ := fa.Apply(ba.add(c.t, c.cmd)).(Result)
		want = append(want, r)
	}
	got, _ := fb.Apply(bb.group(cmds...)).([]Result)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("grouped results %+v,\nwant %+v", got, want)
	}
	if lone.Size() != grouped.Size() || lone.Size() < 3 {
		t.Fatalf("receipts: %d grouped, %d alone (want at least 3)", grouped.Size(), lone.Size())
	}
	for i := int64(0); i < lone.Size(); i++ {
		a, _ := lone.Leaf(i)
		b, _ := grouped.Leaf(i)
		if !bytes.Equal(a, b) {
			t.Errorf("receipt %d differs:\n%s\n%s", i, a, b)
		}
	}
}

// TestReplayWithGroupsIsByteIdentical: a log of groups and single entries
// replayed into fresh FSMs, and a snapshot taken midway restored and given
// the rest, give the same bytes.
func TestReplayWithGroupsIsByteIdentical(t *testing.T) {
	f, b := fleetFSM(t)
	apply(t, f, b, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 40})
	var mid int
	for i := 0; i < 60; i++ {
		at := t0.Add(time.Duration(i) * 3 * time.Minute)
		var cmds []groupCmd
		for k := 0; k < 1+i%7; k++ {
			id := fmt.Sprintf("int-%02d-%d", i, k)
			cmds = append(cmds, groupCmd{MsgAdmit, admit(id, fmt.Sprintf("key-%d", (i*7+k)%90), fmt.Sprint(k%2), at, func(a *Admit) {
				a.RunID = fmt.Sprintf("run-%d", k%3)
				a.Decision.ApprovalRequired = k == 3
			})})
		}
		if len(cmds) == 1 {
			f.Apply(b.add(cmds[0].t, cmds[0].cmd))
		} else {
			f.Apply(b.group(cmds...))
		}
		if i%9 == 8 {
			f.Apply(b.add(MsgTick, Tick{At: at.Add(20 * time.Minute)}))
		}
		if i == 30 {
			mid = len(b.logs)
		}
	}
	want, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := replay(t, b.logs).Encode(); !bytes.Equal(got, want) {
		t.Fatal("replaying a log with groups differs from the original state")
	}
	half := replay(t, b.logs[:mid])
	restored := restoreInto(t, half, newFSM(t))
	// The rest as Raft delivers it after a restore: in batches.
	if out := restored.ApplyBatch(b.logs[mid:]); len(out) != len(b.logs)-mid {
		t.Fatalf("ApplyBatch answered %d of %d entries", len(out), len(b.logs)-mid)
	}
	if got, _ := restored.Encode(); !bytes.Equal(got, want) {
		t.Fatal("snapshot + restore + the rest of a log with groups differs from replaying it")
	}
}

func TestEncodeGroupRefuses(t *testing.T) {
	one, _ := Encode(MsgNoop, "x")
	nested, _ := EncodeGroup([][]byte{one, one})
	for name, cmds := range map[string][][]byte{
		"none":     nil,
		"empty":    {one, {}},
		"nested":   {one, nested},
		"too many": make([][]byte, MaxGroup+1),
	} {
		if _, err := EncodeGroup(cmds); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestCorruptGroupPanics(t *testing.T) {
	one, _ := Encode(MsgNoop, "x")
	good, _ := EncodeGroup([][]byte{one, one})
	for name, data := range map[string][]byte{
		"no count":        {byte(MsgGroup)},
		"count zero":      {byte(MsgGroup), 0},
		"truncated":       good[:len(good)-1],
		"trailing bytes":  append(append([]byte(nil), good...), 0),
		"empty command":   {byte(MsgGroup), 1, 0},
		"nested":          append([]byte{byte(MsgGroup), 1, byte(len(good))}, good...),
		"unknown command": {byte(MsgGroup), 1, 2, 0xEE, '{'},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("a corrupt group was applied without a panic")
				}
			}()
			newFSM(t).Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		})
	}
}

// FuzzDecodeGroup: any bytes either fail to decode or decode to commands
// that encode back to the same bytes.
func FuzzDecodeGroup(f *testing.F) {
	one, _ := Encode(MsgNoop, "x")
	adm, _ := Encode(MsgAdmit, admit("a", "k", "p", t0))
	good, _ := EncodeGroup([][]byte{one, adm})
	f.Add(good[1:])
	f.Add([]byte{1, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds, err := decodeGroup(data)
		if err != nil {
			return
		}
		again, err := EncodeGroup(cmds)
		if err != nil {
			t.Fatalf("decoded %d commands that do not encode: %v", len(cmds), err)
		}
		if !bytes.Equal(again[1:], data) {
			t.Fatalf("decode then encode changed the bytes")
		}
	})
}

// TestEncodeAdmitBytes: the admit entry's bytes do not depend on how much
// Encode checks the canonical intent it carries: the log format is unchanged.
func TestEncodeAdmitBytes(t *testing.T) {
	a := admit("int-1", "k", "p", t0)
	a.Intent = []byte(`{"id":"int-1","params":{"a":[1,2,{"b":"\u00e9"}]},"tool":"echo"}`)
	got, err := Encode(MsgAdmit, a)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[1:], strict) || MsgType(got[0]) != MsgAdmit {
		t.Fatalf("got %s,\nwant %s", got[1:], strict)
	}
}

// TestVarintsShortestOnly: uvarint, and the signed varints of binary admits,
// accept exactly the shortest forms, checked against encoding/binary over
// every sequence of one and two bytes and some longer ones.
func TestVarintsShortestOnly(t *testing.T) {
	var seqs [][]byte
	for x := range 1 << 16 {
		seqs = append(seqs, []byte{byte(x)}, []byte{byte(x), byte(x >> 8)})
	}
	for _, v := range []uint64{1 << 21, 1<<35 - 1, 1 << 63, ^uint64(0)} {
		b := binary.AppendUvarint(nil, v)
		seqs = append(seqs, b, append(append(b[:len(b)-1:len(b)-1], b[len(b)-1]|0x80), 0))
	}
	for _, b := range seqs {
		v, k := varint.Uvarint(b)
		bv, bk := binary.Uvarint(b)
		if want := bk > 0 && bk == len(binary.AppendUvarint(nil, bv)); (k > 0) != want || (want && (v != bv || k != bk)) {
			t.Fatalf("Uvarint(%x) = %d, %d; shortest: %v", b, v, k, want)
		}
		sv, sk := binary.Varint(b)
		if sk > 0 && sk < len(b) {
			continue // b is more than one varint
		}
		r := admitReader{b: append(bytes.Clone(b), 0)} // nanoseconds 0 after the seconds
		want := sk > 0 && sk == len(binary.AppendVarint(nil, sv)) && sv >= minTime && sv <= maxTime
		if r.time(); r.err == want {
			t.Fatalf("time seconds %x: refused %v, shortest and in range %v", b, r.err, want)
		}
	}
}
