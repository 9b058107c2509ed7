package main_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/jsonx"
)

// TestAdminEntriesOffline: writ dev's own setup and an admin's lock are on
// the record (writ ledger admin); the lock's entry, fetched with writ
// receipt get, verifies offline with writ verify admin against ledger.pub,
// and fails once changed.
func TestAdminEntriesOffline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	defer stopWritDev(t, dev)
	token := []string{"--server", server, "--token-file", filepath.Join(dir, "admin.token")}
	keyFile := filepath.Join(dir, "ledger.pub")

	out, code := run(t, "", append([]string{"lock", "create", "--tenant", "globex", "--reason", "on the record", "--ttl", "1h"}, token...)...)
	if code != 0 {
		t.Fatalf("lock create: %q exit %d", out, code)
	}
	var lock struct{ Lock struct{ ID string } }
	jsonx.UnmarshalLenient([]byte(out), &lock)

	out, code = run(t, "", append([]string{"ledger", "admin"}, token...)...)
	var list struct {
		Entries []struct {
			Index                        uint64
			Actor, Action, Object, After string
		}
	}
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &list) != nil || len(list.Entries) == 0 {
		t.Fatalf("ledger admin: %q exit %d", out, code)
	}
	newest := list.Entries[0]
	if newest.Action != "lock.create" || newest.Object != lock.Lock.ID || !strings.HasPrefix(newest.Actor, "admin-token:") || newest.After == "" {
		t.Fatalf("the newest entry is %+v, want the lock %s by the admin token", newest, lock.Lock.ID)
	}
	dev0 := list.Entries[len(list.Entries)-1]
	if dev0.Actor != "dev" || dev0.Action != "tenant.put" {
		t.Errorf("the oldest entry is %+v, want writ dev's tenant.put", dev0)
	}
	if out, code := run(t, "", append([]string{"-o", "text", "ledger", "admin", "--limit", "1"}, token...)...); code != 0 ||
		!strings.HasPrefix(out, "INDEX") || !strings.Contains(out, "lock.create") || strings.Count(out, "\n") != 2 {
		t.Errorf("ledger admin -o text --limit 1: %q exit %d", out, code)
	}

	// The entry is proved once a checkpoint covers it.
	var entry string
	eventually.Within(t, 30*time.Second, "a checkpoint over the admin entry", func() bool {
		entry, code = run(t, "", append([]string{"receipt", "get", fmt.Sprint(newest.Index)}, token...)...)
		return code == 0
	})
	if code != 0 || !strings.Contains(entry, `"type":"writ.admin/v1"`) {
		t.Fatalf("receipt get %d: %q exit %d", newest.Index, entry, code)
	}
	file := writeFile(t, t.TempDir(), "entry.json", entry)
	out, code = run(t, "", "verify", "admin", file, "--key-file", keyFile)
	if code != 0 || !strings.HasPrefix(out, `{"valid":true`) || !strings.Contains(out, `"action":"lock.create"`) {
		t.Fatalf("verify admin: %q exit %d", out, code)
	}
	if out, code := run(t, "", "verify", "receipt", file, "--key-file", keyFile); code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Errorf("verify receipt of an admin entry (the same leaf scheme): %q exit %d", out, code)
	}
	for _, c := range []struct{ name, from, to string }{
		{"action", `"action":"lock.create"`, `"action":"lock.delete"`},
		{"actor", `"actor":"admin-token:`, `"actor":"admin-token:0`},
		{"type", `"type":"writ.admin/v1"`, `"type":"writ.receipt/v1"`},
	} {
		tampered := strings.Replace(entry, c.from, c.to, 1)
		if tampered == entry {
			t.Fatalf("%s: %s is not in the entry", c.name, c.from)
		}
		out, code := run(t, "", "verify", "admin", writeFile(t, t.TempDir(), "tampered.json", tampered), "--key-file", keyFile)
		if code != 1 || !strings.HasPrefix(out, `{"valid":false`) {
			t.Errorf("verify admin with the %s changed: %q exit %d, want invalid", c.name, out, code)
		}
	}
}
