package fsm

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/writhq/writ/protocol"
)

// authzCmd wraps cmd as an admin change marked as the servers mark theirs.
func authzCmd(t testing.TB, at time.Time, mt MsgType, cmd any) AdminCmd {
	c := adminCmd(t, "admin-token:0123456789abcdef", at, mt, cmd)
	c.Authz = true
	return c
}

var (
	authzPolicy  = PutPolicy{Text: "permit(principal, action, resource);", Hash: protocol.HashBytes([]byte("p1")), At: t0}
	authzPolicy2 = PutPolicy{Text: "forbid(principal, action, resource);", Hash: protocol.HashBytes([]byte("p2")), At: t0}
)

// authzFSM is an FSM with a ledger, the echo tool, a ready node, a tenant
// whose runs may admit one intent each, an orchestrator key, an approver key
// and a policy set, each put as the API puts them.
func authzFSM(t *testing.T) (*FSM, *logBuilder, Ledger) {
	t.Helper()
	l := memLedger(t)
	f, b := withLedger(t, l), fleetLog(t)
	for _, e := range b.logs {
		f.Apply(e)
	}
	for _, c := range []struct {
		mt  MsgType
		cmd any
	}{
		{MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 1}},
		{MsgPutIntentKey, PutIntentKey{Tenant: "acme", KeyID: "orch-1", Sealed: []byte("sealed-1")}},
		{MsgPutApproverKey, PutApproverKey{Tenant: "acme", KeyID: "alice", Public: make([]byte, 32), Approver: "alice"}},
		{MsgPutPolicy, authzPolicy},
	} {
		if r := apply(t, f, b, MsgAdmin, authzCmd(t, t0, c.mt, c.cmd)); r.Err != nil {
			t.Fatalf("%s: %v", c.mt, r.Err)
		}
	}
	return f, b, l
}

// TestAdmitRefusedAfterAuthChange: an admission checked at index i, then a
// change of keys, a tool or the policy set at j > i, then the admission
// applied: refused authorization_changed, with no intent, no receipt, its
// key unbound and its run's budget untouched. Checked at j (as the leader
// checks again), the same admission is admitted; with no check index (every
// entry written before it was carried) it is admitted as before.
func TestAdmitRefusedAfterAuthChange(t *testing.T) {
	rollback := authzPolicy2 // a rollback to a version with other text
	rollback.RollbackOf = 1
	changes := map[string]struct {
		mt  MsgType
		cmd any
	}{
		"policy put":           {MsgPutPolicy, authzPolicy2},
		"policy rolled back":   {MsgPutPolicy, rollback},
		"tool changed":         {MsgPutTool, PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo","v":2}`), Tier: "wasm", TimeoutMS: 1000}},
		"tool added":           {MsgPutTool, PutTool{Name: "other", Hash: "sha256:o", Spec: []byte(`{"name":"other"}`), Tier: "wasm", TimeoutMS: 1000}},
		"intent key rotated":   {MsgPutIntentKey, PutIntentKey{Tenant: "acme", KeyID: "orch-1", Sealed: []byte("sealed-2")}},
		"intent key removed":   {MsgDeleteIntentKey, DeleteKey{Tenant: "acme", KeyID: "orch-1"}},
		"approver key put":     {MsgPutApproverKey, PutApproverKey{Tenant: "acme", KeyID: "bob", Public: make([]byte, 32), Approver: "bob"}},
		"approver key removed": {MsgDeleteApproverKey, DeleteKey{Tenant: "acme", KeyID: "alice"}},
	}
	for name, ch := range changes {
		for _, mt := range []MsgType{MsgAdmit, MsgAdmitBinary} {
			t.Run(fmt.Sprintf("%s/%s", name, mt), func(t *testing.T) {
				f, b, l := authzFSM(t)
				check := uint64(len(b.logs))
				if r := apply(t, f, b, MsgAdmin, authzCmd(t, t0, ch.mt, ch.cmd)); r.Err != nil {
					t.Fatal(r.Err)
				}
				changed := uint64(len(b.logs))
				if got := f.Reader().AuthIndex(); got != changed {
					t.Fatalf("AuthIndex %d after the change at %d", got, changed)
				}
				before, _ := f.Encode()
				receipts := l.Size()
				a := admit("int-1", "k1", "p", t0.Add(time.Minute), func(a *Admit) { a.CheckIndex = check })
				r := apply(t, f, b, mt, a)
				if r.Err == nil || r.Err.Code != protocol.CodeAuthorizationChanged || r.IntentID != "" {
					t.Fatalf("checked at %d, applied after a change at %d: %+v, want authorization_changed", check, changed, r)
				}
				after, _ := f.Encode()
				// Nothing but the applied index differs.
				if !bytes.Equal(after, bytes.Replace(before, fmt.Appendf(nil, `"index":%d,`, changed), fmt.Appendf(nil, `"index":%d,`, changed+1), 1)) {
					t.Errorf("the refused admission changed the state:\n%s\n%s", before, after)
				}
				if l.Size() != receipts {
					t.Errorf("the refusal appended %d receipts", l.Size()-receipts)
				}
				// Checked again against the state with the change: admitted,
				// bound, and the run's one unit of budget used.
				a.CheckIndex = len64(b)
				if r := apply(t, f, b, mt, a); r.Err != nil || r.IntentID != "int-1" || r.Duplicate {
					t.Fatalf("checked again: %+v", r)
				}
				if in := state(t, f, "int-1"); in.State != StateDispatched {
					t.Errorf("checked again: %s, want dispatched", in.State)
				}
				a2 := admit("int-2", "k2", "p", t0.Add(time.Minute), func(a *Admit) { a.CheckIndex = len64(b) })
				if apply(t, f, b, mt, a2); state(t, f, "int-2").Error.Code != protocol.CodeBudgetExhausted {
					t.Errorf("a second intent of the run: %+v, want budget_exhausted (the refusal used none)", state(t, f, "int-2"))
				}
			})
		}
	}
}

func len64(b *logBuilder) uint64 { return uint64(len(b.logs)) }

// TestAdmitCheckIndexZeroAppliesAsBefore: an admission without a check index,
// as every entry written before it was carried, is applied after any change,
// exactly as it always was: the replay of an old log does not change.
func TestAdmitCheckIndexZeroAppliesAsBefore(t *testing.T) {
	for _, mt := range []MsgType{MsgAdmit, MsgAdmitBinary} {
		f, b, _ := authzFSM(t)
		apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutPolicy, authzPolicy2))
		if r := apply(t, f, b, mt, admit("int-1", "k1", "p", t0.Add(time.Minute))); r.Err != nil || r.IntentID != "int-1" {
			t.Fatalf("%s without a check index: %+v", mt, r)
		}
		if s := state(t, f, "int-1").State; s != StateDispatched {
			t.Errorf("%s without a check index: %s, want dispatched", mt, s)
		}
	}
}

// TestAuthIndexOnlyForChanges: what no check reads (a tenant's budget, a
// node, a lock), an authorization change that leaves the state as it was,
// and a command without the servers' mark (every entry written before it
// existed) leave AuthIndex where it was; a marked change sets it.
func TestAuthIndexOnlyForChanges(t *testing.T) {
	f, b, _ := authzFSM(t)
	set := f.Reader().AuthIndex()
	if set != len64(b) {
		t.Fatalf("AuthIndex %d after the policy put at %d", set, len(b.logs))
	}
	// In order: "the same policy" puts the one in force.
	for _, s := range []struct {
		name string
		step func()
	}{
		{"tenant", func() {
			apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 9}))
		}},
		{"lock", func() {
			apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutLock, PutLock{At: t0, Lock: Lock{ID: "lk", Tool: "x", Reason: "r"}}))
		}},
		{"node drained", func() {
			apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgNodeStatus, NodeStatus{At: t0, Node: "n1", Status: NodeDraining}))
		}},
		{"the same policy", func() { apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutPolicy, authzPolicy)) }},
		{"absent key deleted", func() {
			apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgDeleteIntentKey, DeleteKey{Tenant: "acme", KeyID: "none"}))
		}},
		{"admission", func() {
			apply(t, f, b, MsgAdmitBinary, admit("int-1", "k1", "p", t0, func(a *Admit) { a.CheckIndex = len64(b) }))
		}},
		{"unmarked policy", func() { apply(t, f, b, MsgAdmin, adminCmd(t, "a", t0, MsgPutPolicy, authzPolicy2)) }},
		{"bare policy", func() { apply(t, f, b, MsgPutPolicy, authzPolicy) }},
		{"bare key removed", func() { apply(t, f, b, MsgDeleteApproverKey, DeleteKey{Tenant: "acme", KeyID: "alice"}) }},
	} {
		s.step()
		if got := f.Reader().AuthIndex(); got != set {
			t.Errorf("%s: AuthIndex %d, want %d", s.name, got, set)
		}
	}
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutPolicy, authzPolicy2))
	if got := f.Reader().AuthIndex(); got != len64(b) {
		t.Errorf("a marked policy change at %d: AuthIndex %d", len(b.logs), got)
	}
}

// TestApproveRefusedAfterAuthChange: an approval checked at i, the approver's
// key removed at j > i, then the approval applied: refused
// authorization_changed, its nonce not consumed and its intent still
// waiting. Without a check index it is applied as before.
func TestApproveRefusedAfterAuthChange(t *testing.T) {
	f, b, l := authzFSM(t)
	pending := admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true; a.CheckIndex = len64(b) })
	if r := apply(t, f, b, MsgAdmitBinary, pending); r.Err != nil {
		t.Fatal(r.Err)
	}
	old := replay(t, b.logs) // a replica where the key is not removed yet
	check := len64(b)
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgDeleteApproverKey, DeleteKey{Tenant: "acme", KeyID: "alice"}))
	receipts := l.Size()
	ap := approve("int-1", "n1", protocol.DecisionApprove, t0.Add(time.Minute))
	ap.CheckIndex = check
	r := apply(t, f, b, MsgApprove, ap)
	if r.Err == nil || r.Err.Code != protocol.CodeAuthorizationChanged {
		t.Fatalf("approval checked before the key's removal: %+v, want authorization_changed", r)
	}
	if in := state(t, f, "int-1"); in.State != StatePendingApproval || in.Approval != nil {
		t.Errorf("the refused approval moved the intent: %+v", in)
	}
	if f.Reader().NonceConsumed("n1") || l.Size() != receipts {
		t.Error("the refused approval consumed its nonce or appended a receipt")
	}
	// Checked at or after the removal, it is not refused for it.
	ap.CheckIndex = len64(b)
	if r := apply(t, f, b, MsgApprove, ap); r.Err != nil {
		t.Fatalf("approval checked after the change: %+v", r)
	}
	// An old entry, without a check index: applied as it always was.
	ob := &logBuilder{t: t, logs: b.logs[:check]}
	apply(t, old, ob, MsgAdmin, authzCmd(t, t0, MsgDeleteApproverKey, DeleteKey{Tenant: "acme", KeyID: "alice"}))
	ap.CheckIndex = 0
	if r := apply(t, old, ob, MsgApprove, ap); r.Err != nil || state(t, old, "int-1").State != StateDispatched {
		t.Fatalf("approval without a check index: %+v, %s", r, state(t, old, "int-1").State)
	}
}

// TestAuthChangeInGroup: of a group's admissions, each is compared on its
// own: the one checked before the change is refused, the one checked after
// it admitted, and the refusal leaves the next command as if it were not
// there.
func TestAuthChangeInGroup(t *testing.T) {
	f, b, _ := authzFSM(t)
	stale := len64(b)
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutPolicy, authzPolicy2))
	fresh := len64(b)
	res := applyGroup(t, f, b, groupCmd{MsgAdmitBinary, admit("a", "k1", "p", t0, func(a *Admit) { a.CheckIndex = stale })},
		groupCmd{MsgAdmitBinary, admit("b", "k1", "p", t0, func(a *Admit) { a.CheckIndex = fresh })},
		groupCmd{MsgAdmitBinary, admit("c", "k3", "p", t0, func(a *Admit) { a.CheckIndex = stale; a.RunID = "run-2" })})
	if res[0].Err == nil || res[0].Err.Code != protocol.CodeAuthorizationChanged || res[2].Err == nil || res[2].Err.Code != protocol.CodeAuthorizationChanged {
		t.Errorf("stale admissions in a group: %+v, %+v", res[0], res[2])
	}
	if res[1].Err != nil || res[1].IntentID != "b" || res[1].Duplicate {
		t.Errorf("a fresh admission after a stale one under the same key: %+v, want admitted", res[1])
	}
	if _, ok := f.Reader().Intent("a"); ok {
		t.Error("a refused admission was recorded")
	}
}

// TestAuthIndexSurvivesSnapshot: AuthIndex is in snapshots: a replica that
// restored one midway through a log refuses what the replica that applied
// the whole log refuses, and ends with the same bytes.
func TestAuthIndexSurvivesSnapshot(t *testing.T) {
	f, b, _ := authzFSM(t)
	check := len64(b)
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgDeleteIntentKey, DeleteKey{Tenant: "acme", KeyID: "orch-1"}))
	mid := len(b.logs)
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutTenant, PutTenant{Tenant: "acme", RunBudget: 5}))
	apply(t, f, b, MsgAdmitBinary, admit("int-1", "k1", "p", t0, func(a *Admit) { a.CheckIndex = check }))
	apply(t, f, b, MsgAdmitBinary, admit("int-2", "k2", "p", t0, func(a *Admit) { a.CheckIndex = len64(b) }))
	want, _ := f.Encode()
	if !bytes.Contains(want, fmt.Appendf(nil, `"auth_index":%d`, mid)) {
		t.Fatalf("the state does not hold auth_index %d", mid)
	}
	half := replayWith(t, memLedger(t), &logBuilder{t: t, logs: b.logs[:mid]})
	restored := restoreInto(t, half, withLedger(t, memLedger(t)))
	if got := restored.Reader().AuthIndex(); got != uint64(mid) {
		t.Fatalf("restored AuthIndex %d, want %d", got, mid)
	}
	for _, e := range b.logs[mid:] {
		restored.Apply(e)
	}
	if got, _ := restored.Encode(); !bytes.Equal(got, want) {
		t.Errorf("snapshot + the rest of the log differs from the whole log")
	}
	if _, ok := restored.Reader().Intent("int-1"); ok {
		t.Error("the restored replica admitted what was checked before the key's removal")
	}
	if _, ok := restored.Reader().Intent("int-2"); !ok {
		t.Error("the restored replica refused what was checked after the key's removal")
	}
}

// TestApproveCheckedEntry: an approval with a check index is its own entry
// type (MsgApproveChecked), which a server that knows only MsgApprove cannot
// apply unchecked; it encodes only with a check index, and the FSM applies
// it as a MsgApprove: refused authorization_changed when checked before the
// last authorization change, applied (its nonce consumed) when checked at
// or after it.
func TestApproveCheckedEntry(t *testing.T) {
	if MsgApproveChecked == MsgApprove {
		t.Fatal("a checked approval has the type an older server applies")
	}
	ap := approve("int-1", "n1", protocol.DecisionApprove, t0.Add(time.Minute))
	if _, err := Encode(MsgApproveChecked, ap); err == nil {
		t.Fatal("encoded a checked approval with no check index")
	}
	f, b, _ := authzFSM(t)
	pending := admit("int-1", "k1", "p", t0, func(a *Admit) { a.Decision.ApprovalRequired = true; a.CheckIndex = len64(b) })
	if r := apply(t, f, b, MsgAdmitBinary, pending); r.Err != nil {
		t.Fatal(r.Err)
	}
	ap.CheckIndex = len64(b)
	apply(t, f, b, MsgAdmin, authzCmd(t, t0, MsgPutPolicy, authzPolicy2))
	data, err := Encode(MsgApproveChecked, ap)
	if err != nil || MsgType(data[0]) != MsgApproveChecked {
		t.Fatalf("encoded %v, %v", data, err)
	}
	if r := apply(t, f, b, MsgApproveChecked, ap); r.Err == nil || r.Err.Code != protocol.CodeAuthorizationChanged {
		t.Fatalf("a checked approval checked before the policy change: %+v, want authorization_changed", r)
	}
	if f.Reader().NonceConsumed("n1") || state(t, f, "int-1").State != StatePendingApproval {
		t.Fatal("the refused approval consumed its nonce or moved its intent")
	}
	ap.CheckIndex = len64(b)
	if r := apply(t, f, b, MsgApproveChecked, ap); r.Err != nil || !f.Reader().NonceConsumed("n1") || state(t, f, "int-1").State == StatePendingApproval {
		t.Fatalf("a checked approval checked after the change: %+v, %s", r, state(t, f, "int-1").State)
	}
	if s := MsgApproveChecked.String(); s != "approve_checked" {
		t.Errorf("MsgApproveChecked is named %q", s)
	}
}
