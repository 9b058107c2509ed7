package protocol

import (
	"bytes"
	"crypto/ed25519"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// leafStrings are values of every kind the general encoder escapes or refuses.
var leafStrings = []string{
	"", "int-1", "sha256:00ff", "2026-11-22T10:00:00Z", "a\"b\\c", "line\nbreak\ttab\r\b\f",
	"\x00\x01\x1f\x7f", "naïve ключ 😀", "\u2028\u2029", "<&>", "\xff invalid", "a\xc3", "\ufffd",
}

// leafResults are results of every kind: canonical, not canonical, null, none.
var leafResults = []string{
	"", "null", `{}`, `{"a":1,"b":[true,false,null],"c":"x"}`, `{"b":1,"a":2}`, `{ "a":1}`,
	`{"a":1.0}`, `{"a":1e2}`, `{"a":"\u0041"}`, `{"a":1,"a":2}`, `{"ключ":"v"}`, `{"a":9007199254740993}`,
	`{"a":-0}`, `{"a":"\ud800"}`, `[1,2]`, `{"a":`, `{"a":1}x`,
}

var leafIntegers = []uint64{0, 1, 42, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1 << 63, ^uint64(0)}

// randomReceipt fills every field of a receipt from the tables above.
func randomReceipt(rng *rand.Rand) *Receipt {
	s := func() string { return leafStrings[rng.IntN(len(leafStrings))] }
	n := func() uint64 { return leafIntegers[rng.IntN(len(leafIntegers))] }
	ref := func() ApprovalRef { return ApprovalRef{ID: s(), Approver: s(), Hash: s()} }
	r := &Receipt{
		Type: ReceiptType, Index: n(), IntentID: s(), Tenant: s(), Principal: s(), Tool: s(),
		PayloadHash: s(), IdempotencyKey: s(), Outcome: s(), RecordedAt: s(),
		Result: jsontext.Value(leafResults[rng.IntN(len(leafResults))]),
	}
	if len(r.Result) == 0 {
		r.Result = nil
	}
	if rng.IntN(50) == 0 {
		r.Result = jsontext.Value{} // empty, not nil: no JSON at all
	}
	if rng.IntN(2) == 0 {
		r.Error = &ErrorBody{Code: Code(s()), Message: s()}
	}
	if rng.IntN(3) > 0 {
		r.Policy = &PolicyDecision{Hash: s(), Decision: s()}
		for range rng.IntN(3) {
			r.Policy.Policies = append(r.Policy.Policies, s())
		}
	}
	if rng.IntN(2) == 0 {
		a := ref()
		r.Approval = &a
	}
	switch rng.IntN(3) {
	case 1:
		r.Approvals = []ApprovalRef{}
	case 2:
		r.Approvals = []ApprovalRef{ref(), ref()}
	}
	if rng.IntN(2) == 0 {
		r.Dispatch = &DispatchRef{ID: s(), Node: s(), Fence: n()}
	}
	if rng.IntN(2) == 0 {
		v := n()
		r.Supersedes = &v
	}
	return r
}

// checkLeafFast fails t unless the direct encoder either declines r or writes
// exactly what the general path writes; it reports whether it wrote.
func checkLeafFast(t *testing.T, r *Receipt) bool {
	t.Helper()
	fast, ok := r.appendLeaf(nil)
	slow, err := r.leafSlow()
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("direct encoder wrote %s where the general path fails: %v", fast, err)
	}
	if !bytes.Equal(fast, slow) {
		t.Fatalf("direct encoder and general path differ:\n got %s\nwant %s", fast, slow)
	}
	return true
}

// TestReceiptLeafFastPath compares the direct encoder with marshal and
// Canonicalize on many receipts, and checks that it writes the ordinary ones.
func TestReceiptLeafFastPath(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 8785))
	wrote := 0
	const n = 20000
	for range n {
		if checkLeafFast(t, randomReceipt(rng)) {
			wrote++
		}
	}
	if wrote < n/100 {
		t.Errorf("direct encoder wrote %d of %d random receipts, want at least %d", wrote, n, n/100)
	}

	supersedes := uint64(3)
	for _, tc := range []struct {
		name  string
		r     Receipt
		wrote bool
	}{
		{"minimal", Receipt{Type: ReceiptType, IntentID: "int-1", Outcome: OutcomeDenied, RecordedAt: "2026-11-22T10:00:00Z"}, true},
		{"completed", Receipt{
			Type: ReceiptType, Index: 7, IntentID: "int-1", Tenant: "acme", Principal: "bot", Tool: "echo",
			PayloadHash: "sha256:00", IdempotencyKey: "k", Outcome: OutcomeCompleted,
			Policy:   &PolicyDecision{Hash: "sha256:01", Decision: "allow", Policies: []string{"p0", "p1"}},
			Approval: &ApprovalRef{ID: "apr-1", Approver: "alice", Hash: "sha256:02"},
			Dispatch: &DispatchRef{ID: "dsp-1", Node: "node-1", Fence: 42},
			Result:   jsontext.Value(`{"a":[1,"x"],"b":null}`), Supersedes: &supersedes,
			RecordedAt: "2026-11-22T10:00:00Z",
		}, true},
		{"escaped strings", Receipt{Type: ReceiptType, IntentID: "a\"\n\x01é", Outcome: OutcomeFailed,
			Error: &ErrorBody{Code: CodeMalformed, Message: "bad \\ \u2028 😀"}}, true},
		{"result not canonical", Receipt{Type: ReceiptType, Result: jsontext.Value(`{"b":1,"a":2}`)}, false},
		{"result empty, not nil", Receipt{Type: ReceiptType, Result: jsontext.Value{}}, false},
		{"invalid UTF-8", Receipt{Type: ReceiptType, Tenant: "\xff"}, false},
		{"index above 2^53", Receipt{Type: ReceiptType, Index: 1<<53 + 1}, false},
		{"fence of 2^53", Receipt{Type: ReceiptType, Dispatch: &DispatchRef{Fence: 1 << 53}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkLeafFast(t, &tc.r); got != tc.wrote {
				t.Errorf("direct encoder wrote: got %v, want %v", got, tc.wrote)
			}
		})
	}
}

// FuzzReceiptLeaf is differential: the direct encoder, when it writes, writes
// the bytes of marshal and Canonicalize, for any strings, integers and result.
func FuzzReceiptLeaf(f *testing.F) {
	for i, s := range leafStrings {
		f.Add(s, leafStrings[(i+3)%len(leafStrings)], leafIntegers[i%len(leafIntegers)], []byte(leafResults[i%len(leafResults)]))
	}
	f.Fuzz(func(t *testing.T, a, b string, n uint64, result []byte) {
		r := &Receipt{
			Type: ReceiptType, Index: n, IntentID: a, Tenant: b, Principal: a, Tool: b, PayloadHash: a,
			IdempotencyKey: b, Outcome: OutcomeCompleted, RecordedAt: a,
			Error:    &ErrorBody{Code: Code(b), Message: a},
			Policy:   &PolicyDecision{Hash: a, Decision: b, Policies: []string{a, b}},
			Approval: &ApprovalRef{ID: a, Approver: b, Hash: a}, Approvals: []ApprovalRef{{ID: b}},
			Dispatch: &DispatchRef{ID: a, Node: b, Fence: n}, Supersedes: &n,
		}
		r.Result = jsontext.Value(result) // nil, empty or any bytes
		checkLeafFast(t, r)
	})
}

// BenchmarkCanonicalForms: the canonical forms every intent needs on every
// server, each beside the general path it replaces, in the same run: a
// completed receipt's leaf (baseline: marshal, then Canonicalize), and the
// decoding of a node's result sent in canonical form (baseline: sent in the
// struct's member order, as nodes encoded it with json.Marshal).
func BenchmarkCanonicalForms(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	params := []byte(`{"msg":"` + strings.Repeat("x", 500) + `"}`)
	res := &Result{Type: ResultTypeV2, DispatchID: "dsp-0123456789", IntentID: "int-0123456789", Node: "node-1",
		Status: StatusOK, Sandbox: "wasm", StartedAt: "2026-11-26T10:00:00.000Z", FinishedAt: "2026-11-26T10:00:00.001Z", KeyID: "node-1"}
	res.SetCaptured(HashBytes(params), int64(len(params)), params, false)
	canonical, err := res.SignCanonical(priv)
	if err != nil {
		b.Fatal(err)
	}
	structOrder, err := json.Marshal(res)
	if err != nil {
		b.Fatal(err)
	}
	receipt := &Receipt{Type: ReceiptType, Index: 123456, IntentID: "int-0123456789", Tenant: "acme", Principal: "bench",
		Tool: "echo", PayloadHash: HashBytes(params), IdempotencyKey: "int-0123456789", Outcome: OutcomeCompleted,
		Policy:   &PolicyDecision{Hash: HashBytes([]byte("policy")), Decision: "allow", Policies: []string{"p0"}},
		Dispatch: &DispatchRef{ID: "dsp-0123456789", Node: "node-1", Fence: 42}, Result: jsontext.Value(canonical),
		RecordedAt: "2026-11-26T10:00:00.002Z"}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"leaf/baseline=marshal+canonicalize", func() error { _, err := receipt.leafSlow(); return err }},
		{"leaf/direct", func() error { _, err := receipt.Leaf(); return err }},
		{"result/baseline=struct-order", func() error { _, _, err := decodeStrict(structOrder, 0, new(Result)); return err }},
		{"result/canonical", func() error { _, _, err := decodeStrict(canonical, 0, new(Result)); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
