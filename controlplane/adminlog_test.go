package controlplane_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// adminEntries lists the admin entries a kind of caller reads.
func (w *accessWorld) adminEntries(t *testing.T, kind string) []protocol.AdminEntry {
	t.Helper()
	a := w.send(t, kind, probe{method: "GET", path: "/v1/ledger/admin?limit=1000"})
	if a.status != http.StatusOK {
		t.Fatalf("%s lists admin entries: %d %s", kind, a.status, a.body)
	}
	var l struct{ Entries []protocol.AdminEntry }
	if err := jsonx.UnmarshalLenient(a.body, &l); err != nil {
		t.Fatal(err)
	}
	return l.Entries
}

// TestAdminEntriesAPI: the changes writ dev makes and the admin's are on
// the record with their actors; a refused admin request appends nothing;
// an admin entry goes whole only to the admin and the auditors who see its
// tenant, as a hash to everyone else; the list is scoped the same way.
func TestAdminEntriesAPI(t *testing.T) {
	t.Parallel()
	w := newAccessWorld(t)
	ctx := context.Background()
	sum := sha256.Sum256([]byte(w.d.creds.AdminToken))
	adminActor := "admin-token:" + hex.EncodeToString(sum[:8])

	all := w.adminEntries(t, controlplane.KindAdmin)
	find := func(entries []protocol.AdminEntry, action, object string) *protocol.AdminEntry {
		for i := range entries {
			if entries[i].Action == action && entries[i].Object == object {
				return &entries[i]
			}
		}
		return nil
	}
	tool := find(all, protocol.AdminToolPut, "echo")
	if tool == nil || tool.Actor != controlplane.ActorDev || tool.After == "" || tool.Tenant != "" {
		t.Fatalf("writ dev's tool: %+v in %+v", tool, all)
	}
	globex := find(all, protocol.AdminKeyPut, "globex/g1")
	if globex == nil || globex.Actor != adminActor || globex.Tenant != "globex" || globex.Before != "" || globex.After == "" {
		t.Fatalf("the admin's key of globex: %+v", globex)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Index >= all[i-1].Index {
			t.Fatalf("not newest first: %d after %d", all[i].Index, all[i-1].Index)
		}
	}

	// Refused requests append nothing; an accepted one appends one.
	for _, bad := range []probe{
		{method: "POST", path: "/v1/admin/locks", body: `{"reason":""}`},
		{method: "POST", path: "/v1/admin/locks", body: `{"tenant":"acme","reason":"r","extra":1}`},
		{method: "PUT", path: "/v1/admin/tenants/acme", body: `{"run_budget":-1}`},
		{method: "PUT", path: "/v1/admin/policy", body: `permit(`},
		{method: "POST", path: "/v1/admin/nodes/no-such-node/drain"},
		{method: "DELETE", path: "/v1/admin/locks/lck-none"},
	} {
		if a := w.send(t, controlplane.KindAdmin, bad); a.status < 400 {
			t.Fatalf("%s %s %s: %d, want refused", bad.method, bad.path, bad.body, a.status)
		}
	}
	if got := w.adminEntries(t, controlplane.KindAdmin); len(got) != len(all) {
		t.Fatalf("refused requests appended %d entries", len(got)-len(all))
	}
	var lock struct{ Lock protocol.LockView }
	if err := w.d.admin.AdminJSON(ctx, "POST", "locks", []byte(`{"tenant":"globex","ttl_seconds":60,"reason":"audit test"}`), &lock); err != nil {
		t.Fatal(err)
	}
	got := w.adminEntries(t, controlplane.KindAdmin)
	if len(got) != len(all)+1 || got[0].Action != protocol.AdminLockCreate || got[0].Object != lock.Lock.ID ||
		got[0].Actor != adminActor || got[0].Tenant != "globex" {
		t.Fatalf("after a lock: %d entries (want %d), newest %+v", len(got), len(all)+1, got[0])
	}

	// Reading one entry: whole, hidden or its hash, by caller.
	const yes, hash, hidden = "yes", "hash", "hidden"
	for _, c := range []struct {
		entry *protocol.AdminEntry
		want  map[string]string
	}{
		{tool, map[string]string{controlplane.KindNone: hash, controlplane.KindOtherTenant: hash, controlplane.KindTenant: hash,
			controlplane.KindViewer: hash, controlplane.KindViewerOther: hash, controlplane.KindApprover: hash,
			controlplane.KindAuditor: hidden, controlplane.KindAuditorOther: hidden, controlplane.KindAdmin: yes}},
		{globex, map[string]string{controlplane.KindNone: hash, controlplane.KindOtherTenant: hash, controlplane.KindTenant: hash,
			controlplane.KindViewer: hash, controlplane.KindViewerOther: hash, controlplane.KindApprover: hash,
			controlplane.KindAuditor: hidden, controlplane.KindAuditorOther: yes, controlplane.KindAdmin: yes}},
	} {
		for _, kind := range controlplane.AccessKinds {
			a := w.send(t, kind, probe{method: "GET", path: fmt.Sprintf("/v1/receipts/%d", c.entry.Index)})
			var body struct {
				Receipt  jsontext.Value `json:"receipt"`
				LeafHash string         `json:"leaf_hash"`
			}
			jsonx.UnmarshalLenient(a.body, &body)
			var is string
			switch {
			case a.status == http.StatusOK && strings.Contains(string(body.Receipt), `"type":"writ.admin/v1"`):
				is = yes
			case a.status == http.StatusOK && body.Receipt == nil && body.LeafHash != "":
				is = hash
			case a.status == http.StatusNotFound:
				is = hidden
			default:
				is = fmt.Sprintf("status %d %s", a.status, a.body)
			}
			if is != c.want[kind] {
				t.Errorf("%s of %s read by %s: %s, want %s", c.entry.Action, c.entry.Object, kind, is, c.want[kind])
			}
		}
	}
	// The list: the auditor of globex reads globex's entries only.
	for _, e := range w.adminEntries(t, controlplane.KindAuditorOther) {
		if e.Tenant != "globex" {
			t.Errorf("the auditor of globex lists %+v", e)
		}
	}
	if len(w.adminEntries(t, controlplane.KindAuditorOther)) < 2 {
		t.Errorf("the auditor of globex does not list its key and lock")
	}
}
