package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/varint"
	"github.com/writhq/writ/protocol"
)

// admitVariants are admissions with every optional part set and unset.
func admitVariants() []*Admit {
	return []*Admit{
		admit("int-1", "k1", "p", t0),
		admit("int-2", "k2", "p", t0.Add(123456789*time.Nanosecond), func(a *Admit) {
			a.Target = &protocol.Target{Node: "node-7", Labels: map[string]string{"zone": "b", "arch": "arm64", "": "empty key"}}
			a.Decision = Decision{Allow: true, ApprovalRequired: true, PolicyHash: "sha256:q", Policies: []string{"a", "b", "ünï"}}
		}),
		admit("int-3", "k3", "p", t0, func(a *Admit) {
			a.Target = &protocol.Target{Node: "only-node"}
			a.Decision = Decision{PolicyHash: "sha256:q", Error: &protocol.ErrorBody{Code: protocol.CodePolicyDenied, Message: "denied by x"}}
		}),
		admit("int-4", "k4", "p", t0, func(a *Admit) {
			// A rejection before any decision, with an unparsable expiry.
			a.ExpiresAt = time.Time{}
			a.Decision = Decision{Error: &protocol.ErrorBody{Code: "expired", Message: ""}}
		}),
		admit("int-5", "", "", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), func(a *Admit) {
			a.ExpiresAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
			a.Target = &protocol.Target{Labels: map[string]string{"k": ""}}
		}),
		admit("int-6", "k6", "p", t0, func(a *Admit) {
			a.Target = &protocol.Target{Node: "n", Labels: map[string]string{}} // empty, not nil
		}),
		admit("int-7", "k7", "p", t0, func(a *Admit) {
			a.Decision = Decision{Allow: true, ApprovalRequired: true, Approvals: 3, PolicyHash: "sha256:q", Policies: []string{"two.of.three"}}
		}),
		admit("int-8", "k8", "p", t0, func(a *Admit) { a.CheckIndex = 1 }),
		admit("int-9", "k9", "p", t0, func(a *Admit) {
			a.Decision = Decision{Allow: true, ApprovalRequired: true, Approvals: 2, PolicyHash: "sha256:q", Policies: []string{"p"}}
			a.CheckIndex = 1<<64 - 1
		}),
	}
}

// TestAdmitBinaryDecodesAsJSON: an Admit decodes from its binary entry to
// exactly what its JSON entry decodes to.
func TestAdmitBinaryDecodesAsJSON(t *testing.T) {
	for i, c := range admitVariants() {
		bin, err := Encode(MsgAdmitBinary, c)
		if err != nil {
			t.Fatal(err)
		}
		js, err := Encode(MsgAdmit, c)
		if err != nil {
			t.Fatal(err)
		}
		if MsgType(bin[0]) != MsgAdmitBinary || MsgType(js[0]) != MsgAdmit {
			t.Fatalf("%d: entry types %d and %d", i, bin[0], js[0])
		}
		var want Admit
		if err := json.Unmarshal(js[1:], &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeAdmit(bin[1:])
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%d: binary gives\n%+v\nJSON gives\n%+v", i, got, &want)
		}
		if again, _ := EncodeAdmit(got); !bytes.Equal(again, bin) {
			t.Errorf("%d: encoding the decoded admit gives other bytes", i)
		}
	}
	if _, err := Encode(MsgAdmitBinary, PutTenant{}); err == nil {
		t.Error("a binary admit of another command was encoded")
	}
	// What the FSM could not decode, or decode but not snapshot, is refused
	// at the leader, as encoding the JSON admit refuses it.
	for name, mod := range map[string]func(*Admit){
		"year 10000":          func(a *Admit) { a.At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"year -1":             func(a *Admit) { a.ExpiresAt = time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC) },
		"intent not JSON":     func(a *Admit) { a.Intent = jsontext.Value("not json") },
		"intent empty":        func(a *Admit) { a.Intent = nil },
		"id not UTF-8":        func(a *Admit) { a.ID = "int-\xff" },
		"message not UTF-8":   func(a *Admit) { a.Decision.Error = &protocol.ErrorBody{Code: "x", Message: "bad \xff"} },
		"label key not UTF-8": func(a *Admit) { a.Target = &protocol.Target{Labels: map[string]string{"\xfe": "v"}} },
		"policy not UTF-8":    func(a *Admit) { a.Decision.Policies = []string{"\xc3"} },
	} {
		c := admit("x", "k", "p", t0, mod)
		if _, err := EncodeAdmit(c); err == nil {
			t.Errorf("%s: encoded in binary; the FSM would refuse it", name)
		}
		if _, err := Encode(MsgAdmit, c); err == nil && name != "intent empty" { // JSON writes null
			t.Errorf("%s: the JSON admit takes it too; the binary one need not refuse it", name)
		}
	}
}

// TestAdmitBinaryRefusesOtherEncodings: anything but EncodeAdmit's own bytes
// is refused, so that an admit has one encoding.
func TestAdmitBinaryRefusesOtherEncodings(t *testing.T) {
	c := admitVariants()[1]
	good, _ := EncodeAdmit(c)
	body := good[1:]
	if _, err := decodeAdmit(body); err != nil {
		t.Fatal(err)
	}
	// Offsets of parts of the body, found by encoding prefixes.
	atLen := len(appendTime(nil, c.At))
	cases := map[string][]byte{
		"empty":            {},
		"trailing byte":    append(bytes.Clone(body), 0),
		"truncated":        body[:len(body)-1],
		"long varint":      append(append(binary.AppendVarint(nil, c.At.Unix()), longUvarint(uint64(c.At.Nanosecond()))...), body[atLen:]...),
		"nanoseconds 1e9":  append(append(binary.AppendVarint(nil, c.At.Unix()), binary.AppendUvarint(nil, uint64(time.Second))...), body[atLen:]...),
		"year 10000":       append(append(binary.AppendVarint(nil, maxTime+1), 0), body[atLen:]...),
		"intent too long":  append(append(body[:atLen:atLen], binary.AppendUvarint(nil, uint64(len(body)))...), body[atLen+2:]...),
		"bad flags":        replaceFlags(t, c, 4),
		"unknown flag":     replaceFlags(t, c, 16),
		"check index cut":  replaceFlags(t, c, 8), // flagged, and the policy hash's length read as the index
		"labels unordered": swapLabels(t, c),
		"invalid utf-8":    bytes.Replace(body, []byte("node-7"), []byte("node\xff7"), 1),
	}
	for name, b := range cases {
		if got, err := decodeAdmit(b); err == nil {
			t.Errorf("%s: decoded to %+v", name, got)
		}
	}
}

// longUvarint is v as an unsigned varint one byte longer than its shortest form.
func longUvarint(v uint64) []byte {
	b := binary.AppendUvarint(nil, v)
	b[len(b)-1] |= 0x80
	return append(b, 0)
}

// replaceFlags returns c's body with its decision flags set to flags.
func replaceFlags(t *testing.T, c *Admit, flags byte) []byte {
	d := *c
	d.Decision.Allow, d.Decision.ApprovalRequired = false, false
	b, _ := EncodeAdmit(&d)
	// The flags byte precedes the policy hash.
	hash := append(binary.AppendUvarint(nil, uint64(len(d.Decision.PolicyHash))), d.Decision.PolicyHash...)
	i := bytes.LastIndex(b, hash)
	if i < 1 || b[i-1] != 0 {
		t.Fatal("flags byte not found")
	}
	b[i-1] = flags
	return b[1:]
}

// swapLabels returns c's body with its two first labels in decreasing order.
func swapLabels(t *testing.T, c *Admit) []byte {
	b, _ := EncodeAdmit(c)
	pair := func(k string) []byte {
		return varint.AppendBytes(varint.AppendBytes(nil, k), c.Target.Labels[k])
	}
	a, z := pair(""), pair("arch")
	i := bytes.Index(b, append(bytes.Clone(a), z...))
	if i < 0 {
		t.Fatal("labels not found")
	}
	copy(b[i:], append(bytes.Clone(z), a...))
	return b[1:]
}

// TestAdmitEncodingsApplyAlike: a log of binary admits and the same log of
// JSON admits give byte-identical state and the same results.
func TestAdmitEncodingsApplyAlike(t *testing.T) {
	// JSON, binary, and the two mixed as in the log of a cluster upgraded
	// mid-life (and then snapshotted and restored, below).
	var states [3][]byte
	var results [3][]string
	var mixed *logBuilder
	for k := range 3 {
		mt := func(i int) MsgType {
			return []MsgType{MsgAdmit, MsgAdmitBinary, []MsgType{MsgAdmit, MsgAdmitBinary}[i/30]}[k]
		}
		f, b := fleetFSM(t)
		step := func(mt MsgType, cmd any) any { return f.Apply(b.add(mt, cmd)) }
		step(MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 40})
		step(MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000})
		for i := range 60 {
			at := t0.Add(time.Duration(i) * 3 * time.Minute)
			v := admitVariants()[i%6]
			c := admit(fmt.Sprintf("int-%03d", i), fmt.Sprintf("k%d", i%45), fmt.Sprint(i%2), at, func(a *Admit) {
				a.Target, a.Decision, a.RunID = v.Target, v.Decision, fmt.Sprintf("run-%d", i%3)
			})
			res, _ := json.Marshal(step(mt(i), c))
			results[k] = append(results[k], string(res))
			if i%10 == 9 {
				step(MsgTick, Tick{At: at.Add(time.Minute)})
			}
		}
		var err error
		if states[k], err = f.Encode(); err != nil {
			t.Fatal(err)
		}
		mixed = b
	}
	for k, name := range []string{"binary", "mixed"} {
		if !bytes.Equal(states[0], states[k+1]) {
			t.Errorf("the %s log gave another state than the JSON one", name)
		}
		if !reflect.DeepEqual(results[0], results[k+1]) {
			t.Errorf("%s: results differ:\n%v\n%v", name, results[0], results[k+1])
		}
	}
	// A snapshot taken midway through the mixed log, restored, and the rest
	// (binary admits) applied: the same state again.
	half := replay(t, mixed.logs[:len(mixed.logs)/2])
	restored := restoreInto(t, half, newFSM(t))
	for _, l := range mixed.logs[len(mixed.logs)/2:] {
		restored.Apply(l)
	}
	if got, _ := restored.Encode(); !bytes.Equal(got, states[0]) {
		t.Error("a snapshot midway through the mixed log + the rest differs")
	}
}

// TestAdmitCheckIndexEncoding: the check index is carried only when not 0,
// after the flags byte and the number of approvers; an entry written before
// it was carried (no flag) decodes with 0, and a flagged 0 is refused.
func TestAdmitCheckIndexEncoding(t *testing.T) {
	for _, approvals := range []int{0, 4} {
		plainAdmit := admit("int-1", "k1", "p", t0, func(a *Admit) {
			a.Decision.ApprovalRequired, a.Decision.Approvals = true, approvals
		})
		plain, _ := EncodeAdmit(plainAdmit)
		withIndex := *plainAdmit
		withIndex.CheckIndex = 300 // two bytes as a varint
		b, err := EncodeAdmit(&withIndex)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for i < len(plain) && plain[i] == b[i] {
			i++
		}
		at := i + 1 // after the flags
		if approvals > 1 {
			at++
		}
		if len(b) != len(plain)+2 || b[i]&8 == 0 || !bytes.Equal(b[at:at+2], binary.AppendUvarint(nil, 300)) {
			t.Fatalf("approvals %d: the check index is not after the flags: %x and %x", approvals, plain, b)
		}
		if got, err := decodeAdmit(plain[1:]); err != nil || got.CheckIndex != 0 {
			t.Errorf("approvals %d: an entry without the flag: %v, check index %d", approvals, err, got.CheckIndex)
		}
		if got, err := decodeAdmit(b[1:]); err != nil || got.CheckIndex != 300 {
			t.Errorf("approvals %d: %v, check index %d, want 300", approvals, err, got.CheckIndex)
		}
		zero := append(append(bytes.Clone(b[:at]), 0), b[at+2:]...)
		if _, err := decodeAdmit(zero[1:]); err == nil {
			t.Errorf("approvals %d: a flagged check index of 0 decoded", approvals)
		}
	}
}

// TestAdmitApprovalsEncoding: the number of approvers is carried only when
// more than one, and a count the leader would not propose is refused either
// way.
func TestAdmitApprovalsEncoding(t *testing.T) {
	for _, n := range []int{-1, 1, MaxApprovals + 1} {
		c := admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired, a.Decision.Approvals = true, n })
		if _, err := EncodeAdmit(c); err == nil {
			t.Errorf("%d approvers encoded", n)
		}
	}
	if _, err := EncodeAdmit(admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.Approvals = 2 })); err == nil {
		t.Error("approvers of an intent that waits for no approval encoded")
	}
	c := admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired, a.Decision.Approvals = true, 2 })
	b, err := EncodeAdmit(c)
	if err != nil {
		t.Fatal(err)
	}
	// The count follows the flags byte, the first byte where the entry
	// differs from the same admit needing one approval: rewrite it to 0, 1
	// and past the maximum, and the entry no longer decodes.
	plain, _ := EncodeAdmit(admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true }))
	i := 0
	for i < len(plain) && plain[i] == b[i] {
		i++
	}
	if len(b) != len(plain)+1 || b[i]&4 == 0 || b[i+1] != 2 {
		t.Fatalf("the count is not after the flags: %x and %x", plain, b)
	}
	if mod := bytes.Clone(b); true {
		mod[i] &^= 2 // approvers, but no approval required
		if _, err := decodeAdmit(mod[1:]); err == nil {
			t.Error("approvers without approval required decoded")
		}
	}
	for _, bad := range []byte{0, 1, MaxApprovals + 1} {
		mod := bytes.Clone(b)
		mod[i+1] = bad
		if _, err := decodeAdmit(mod[1:]); err == nil {
			t.Errorf("a count of %d decoded", bad)
		}
	}
}

func FuzzDecodeAdmit(f *testing.F) {
	for _, c := range admitVariants() {
		b, _ := EncodeAdmit(c)
		f.Add(b[1:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := decodeAdmit(body)
		if err != nil {
			return
		}
		again, err := EncodeAdmit(c)
		if err != nil {
			t.Fatalf("a decoded admit does not encode: %v", err)
		}
		if !bytes.Equal(again[1:], body) {
			t.Fatalf("two encodings of one admit:\n%x\n%x", body, again[1:])
		}
	})
}
