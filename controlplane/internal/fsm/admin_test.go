package fsm

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/protocol"
)

// adminCmd wraps cmd as an admin change by actor at at.
func adminCmd(t testing.TB, actor string, at time.Time, mt MsgType, cmd any) AdminCmd {
	t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return AdminCmd{Actor: actor, At: at, Type: mt, Cmd: b}
}

// TestAdminEntries: every admin change appends exactly one admin entry, with
// its action, object, tenant and the hashes of the object before and after
// (each the one the previous change of the object left); a refused change,
// and one that leaves the object as it was, append nothing; a replica
// applying the same log holds the same leaves.
func TestAdminEntries(t *testing.T) {
	l := memLedger(t)
	f, b := withLedger(t, l), &logBuilder{t: t}
	enrollNode(b, "n1", 1) // bare commands: no entries
	for _, e := range b.logs {
		f.Apply(e)
	}
	if l.Size() != 0 {
		t.Fatalf("bare commands appended %d leaves", l.Size())
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pol := PutPolicy{Text: "permit(principal, action, resource);", Hash: protocol.HashBytes([]byte("p1")), At: at(1)}
	pol2 := PutPolicy{Text: "forbid(principal, action, resource);", Hash: protocol.HashBytes([]byte("p2")), At: at(1)}
	rollback := pol
	rollback.RollbackOf = 7
	long := strings.Repeat("t", protocol.MaxIDLen) // the longest tenant and key id the API takes
	user := PutUser{ID: "u1", Hash: protocol.HashBytes([]byte("secret")), Role: RoleViewer, CreatedAt: t0, ExpiresAt: at(3600)}
	steps := []struct {
		name      string
		mt        MsgType
		cmd       any
		action    string
		object    string
		tenant    string
		before    string // "prev": the previous entry of the object's after; "": none
		after     string // "new": some hash other than before; "": none; else that hash
		refused   protocol.Code
		unchanged bool // applied, but the object is as it was: no entry
	}{
		{name: "tenant", mt: MsgPutTenant, cmd: PutTenant{Tenant: "acme", RunBudget: 5}, action: protocol.AdminTenantPut, object: "acme", tenant: "acme", after: "new"},
		{name: "tenant budget", mt: MsgPutTenant, cmd: PutTenant{Tenant: "acme", RunBudget: 6}, action: protocol.AdminTenantPut, object: "acme", tenant: "acme", before: "prev", after: "new"},
		{name: "tenant put again as it is", mt: MsgPutTenant, cmd: PutTenant{Tenant: "acme", RunBudget: 6}, unchanged: true},
		{name: "intent key", mt: MsgPutIntentKey, cmd: PutIntentKey{Tenant: "acme", KeyID: "k1", Sealed: []byte("sealed-1")}, action: protocol.AdminKeyPut, object: "acme/k1", tenant: "acme", after: "new"},
		{name: "intent key rotated", mt: MsgPutIntentKey, cmd: PutIntentKey{Tenant: "acme", KeyID: "k1", Sealed: []byte("sealed-2")}, action: protocol.AdminKeyPut, object: "acme/k1", tenant: "acme", before: "prev", after: "new"},
		{name: "intent key deleted", mt: MsgDeleteIntentKey, cmd: DeleteKey{Tenant: "acme", KeyID: "k1"}, action: protocol.AdminKeyDelete, object: "acme/k1", tenant: "acme", before: "prev"},
		{name: "absent key deleted", mt: MsgDeleteIntentKey, cmd: DeleteKey{Tenant: "acme", KeyID: "k1"}, unchanged: true},
		{name: "approver key", mt: MsgPutApproverKey, cmd: PutApproverKey{Tenant: "acme", KeyID: "a1", Public: make([]byte, 32), Approver: "alice"}, action: protocol.AdminApproverPut, object: "acme/a1", tenant: "acme", after: "new"},
		{name: "approver key deleted", mt: MsgDeleteApproverKey, cmd: DeleteKey{Tenant: "acme", KeyID: "a1"}, action: protocol.AdminApproverDelete, object: "acme/a1", tenant: "acme", before: "prev"},
		{name: "the longest key names", mt: MsgPutIntentKey, cmd: PutIntentKey{Tenant: long, KeyID: long, Sealed: []byte("sealed-3")}, action: protocol.AdminKeyPut, object: long + "/" + long, tenant: long, after: "new"},
		{name: "tool", mt: MsgPutTool, cmd: PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 1000}, action: protocol.AdminToolPut, object: "echo", after: "new"},
		{name: "tool changed", mt: MsgPutTool, cmd: PutTool{Name: "echo", Hash: toolHash, Spec: []byte(`{"name":"echo"}`), Tier: "wasm", TimeoutMS: 2000}, action: protocol.AdminToolPut, object: "echo", before: "prev", after: "new"},
		{name: "policy", mt: MsgPutPolicy, cmd: pol, action: protocol.AdminPolicyPut, object: "policy", after: pol.Hash},
		{name: "policy changed", mt: MsgPutPolicy, cmd: pol2, action: protocol.AdminPolicyPut, object: "policy", before: pol.Hash, after: pol2.Hash},
		{name: "policy rolled back", mt: MsgPutPolicy, cmd: rollback, action: protocol.AdminPolicyRollback, object: "policy", before: pol2.Hash, after: pol.Hash},
		{name: "token", mt: MsgPutUser, cmd: user, action: protocol.AdminTokenCreate, object: "u1", after: "new"},
		{name: "token revoked", mt: MsgDeleteUser, cmd: DeleteUser{ID: "u1"}, action: protocol.AdminTokenRevoke, object: "u1", before: "prev"},
		{name: "join token", mt: MsgPutJoinToken, cmd: PutJoinToken{ID: "jt1", Hash: protocol.HashBytes([]byte("j")), ExpiresAt: at(600)}, action: protocol.AdminJoinTokenCreate, object: "jt1", after: "new"},
		{name: "node drained", mt: MsgNodeStatus, cmd: NodeStatus{At: at(2), Node: "n1", Status: NodeDraining}, action: protocol.AdminNodeDrain, object: "n1", before: "first", after: "new"},
		{name: "node ready", mt: MsgNodeStatus, cmd: NodeStatus{At: at(2), Node: "n1", Status: NodeReady}, action: protocol.AdminNodeReady, object: "n1", before: "prev", after: "new"},
		{name: "unknown node", mt: MsgNodeStatus, cmd: NodeStatus{At: at(2), Node: "nx", Status: NodeDraining}, refused: protocol.CodeNotFound},
		{name: "node revoked", mt: MsgNodeStatus, cmd: NodeStatus{At: at(2), Node: "n1", Status: NodeRevoked}, action: protocol.AdminNodeRevoke, object: "n1", before: "prev", after: "new"},
		{name: "lock", mt: MsgPutLock, cmd: PutLock{At: at(3), Lock: Lock{ID: "lk1", Tenant: "acme", Reason: "runaway", By: "admin"}}, action: protocol.AdminLockCreate, object: "lk1", tenant: "acme", after: "new"},
		{name: "lock id taken", mt: MsgPutLock, cmd: PutLock{At: at(3), Lock: Lock{ID: "lk1", Tool: "echo", Reason: "r"}}, refused: protocol.CodeLockExists},
		{name: "lock matching everything", mt: MsgPutLock, cmd: PutLock{At: at(3), Lock: Lock{ID: "lk2", Reason: "r"}}, refused: protocol.CodeMalformed},
		{name: "lock deleted", mt: MsgDeleteLock, cmd: DeleteLock{At: at(4), ID: "lk1"}, action: protocol.AdminLockDelete, object: "lk1", tenant: "acme", before: "prev"},
	}
	last := map[string]string{}
	for i, s := range steps {
		size := l.Size()
		res := apply(t, f, b, MsgAdmin, adminCmd(t, "admin-token:0123456789abcdef", at(10+i), s.mt, s.cmd))
		if s.refused != "" || s.unchanged {
			if s.refused != "" && (res.Err == nil || res.Err.Code != s.refused) {
				t.Errorf("%s: %+v, want refused %s", s.name, res.Err, s.refused)
			}
			if s.unchanged && res.Err != nil {
				t.Errorf("%s: refused: %v", s.name, res.Err)
			}
			if l.Size() != size {
				t.Errorf("%s: appended %d leaves, want none", s.name, l.Size()-size)
			}
			continue
		}
		if res.Err != nil {
			t.Fatalf("%s: refused: %v", s.name, res.Err)
		}
		if l.Size() != size+1 {
			t.Fatalf("%s: %d leaves appended, want 1", s.name, l.Size()-size)
		}
		leaf, err := l.Leaf(size)
		if err != nil {
			t.Fatal(err)
		}
		e, err := protocol.DecodeAdminEntry(leaf, 0)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if _, err := protocol.DecodeReceipt(leaf, 0); err == nil {
			t.Errorf("%s: an admin entry decodes as a receipt", s.name)
		}
		if e.Index != uint64(size) || e.Action != s.action || e.Object != s.object || e.Tenant != s.tenant ||
			e.Actor != "admin-token:0123456789abcdef" || e.RecordedAt != protocol.FormatTime(at(10+i)) {
			t.Errorf("%s: got %+v, want index %d, %s of %s (tenant %q) at %s", s.name, e, size, s.action, s.object, s.tenant, at(10+i))
		}
		switch s.before {
		case "prev":
			if e.Before == "" || e.Before != last[s.object] {
				t.Errorf("%s: before %q, want the previous after %q", s.name, e.Before, last[s.object])
			}
		case "first":
			if e.Before == "" {
				t.Errorf("%s: no before for an object that existed", s.name)
			}
		default:
			if e.Before != s.before {
				t.Errorf("%s: before %q, want %q", s.name, e.Before, s.before)
			}
		}
		switch s.after {
		case "new":
			if e.After == "" || e.After == e.Before {
				t.Errorf("%s: after %q, want a hash other than before %q", s.name, e.After, e.Before)
			}
		default:
			if e.After != s.after {
				t.Errorf("%s: after %q, want %q", s.name, e.After, s.after)
			}
		}
		last[s.object] = e.After
		if bytes.Contains(leaf, []byte("sealed-")) || bytes.Contains(leaf, []byte("c2VhbGVk")) {
			t.Errorf("%s: the entry carries the sealed secret: %s", s.name, leaf)
		}
	}
	if got, want := len(f.Reader().AdminEntries(0, 0)), int(l.Size()); got != want {
		t.Errorf("AdminEntries lists %d, want %d", got, want)
	}
	if got := f.Reader().AdminEntries(3, 2); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Errorf("AdminEntries(3, 2) = %v, want [2 1]", got)
	}

	// A replica applying the same log holds the same leaves.
	l2 := memLedger(t)
	f2 := withLedger(t, l2)
	for _, e := range b.logs {
		f2.Apply(e)
	}
	if l2.Size() != l.Size() {
		t.Fatalf("the replica holds %d leaves, want %d", l2.Size(), l.Size())
	}
	for i := int64(0); i < l.Size(); i++ {
		a, _ := l.Leaf(i)
		c, _ := l2.Leaf(i)
		if !bytes.Equal(a, c) {
			t.Errorf("leaf %d differs between replicas:\n%s\n%s", i, a, c)
		}
	}
}
