package main_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// TestIntentListCLI runs the real binary: writ dev, intents submitted with
// the CLI, then writ intent list signed with the tenant's key and with the
// admin token from a file, as JSON pages and as a table.
func TestIntentListCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	defer stopWritDev(t, dev)
	var creds struct {
		AdminToken   string `json:"admin_token"`
		Tenant       string `json:"tenant"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	key := creds.Orchestrator.KeyID + "=" + filepath.Join(dir, "orchestrator.key")
	var ids []string // newest first
	for _, runID := range []string{"run-a", "run-b", "run-a"} {
		intent, code := run(t, "", "intent", "sign", "--key", key, "--tenant", creds.Tenant, "--principal", "lister",
			"--run", runID, "--tool", "echo", "--params", `{"msg":"c0nfidential"}`)
		if code != 0 {
			t.Fatal("intent sign")
		}
		out, code := run(t, intent, "intent", "submit", "--server", server, "--wait", "60s")
		var r struct {
			IntentID string `json:"intent_id"`
		}
		if code != 0 || jsonx.UnmarshalLenient([]byte(out), &r) != nil {
			t.Fatalf("submit: %q exit %d", out, code)
		}
		if runID == "run-a" {
			ids = slices.Insert(ids, 0, r.IntentID)
		}
	}
	signed := func(args ...string) (string, int) {
		return run(t, "", append([]string{"intent", "list", "--server", server, "--tenant", creds.Tenant, "--key", key}, args...)...)
	}
	pages := func(out string) (got []string, next []string) {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var p struct {
				Intents []struct{ ID, State string }
				Next    string
			}
			if err := jsonx.UnmarshalLenient([]byte(line), &p); err != nil {
				t.Fatalf("page %q: %v", line, err)
			}
			for _, in := range p.Intents {
				got = append(got, in.ID)
			}
			next = append(next, p.Next)
		}
		return got, next
	}

	out, code := signed("--run", "run-a", "--state", "completed", "--since", "1h")
	if got, _ := pages(out); code != 0 || !slices.Equal(got, ids) || strings.Contains(out, "c0nfidential") {
		t.Fatalf("intent list --run run-a: %q exit %d, want %v", out, code, ids)
	}
	// One page of one, then its cursor, then every page with --all.
	out, code = signed("--run", "run-a", "--limit", "1")
	got, next := pages(out)
	if code != 0 || !slices.Equal(got, ids[:1]) || next[0] == "" {
		t.Fatalf("--limit 1: %q exit %d", out, code)
	}
	out, code = signed("--run", "run-a", "--limit", "1", "--cursor", next[0])
	if got, _ := pages(out); code != 0 || !slices.Equal(got, ids[1:]) {
		t.Fatalf("--cursor: %q exit %d", out, code)
	}
	out, code = signed("--run", "run-a", "--limit", "1", "--all")
	if got, _ := pages(out); code != 0 || !slices.Equal(got, ids) {
		t.Fatalf("--all: %q exit %d", out, code)
	}
	// A table.
	out, code = run(t, "", "-o", "text", "intent", "list", "--server", server, "--tenant", creds.Tenant, "--key", key, "--run", "run-a")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") || !strings.HasPrefix(lines[1], ids[0]+" ") ||
		!strings.Contains(lines[2], " lister ") || !strings.Contains(lines[2], " completed ") {
		t.Fatalf("-o text: %q exit %d", out, code)
	}
	// The admin token, from a file: every tenant's, or one tenant's.
	tokenFile := writeFile(t, t.TempDir(), "token", creds.AdminToken+"\n")
	admin := func(args ...string) (string, int) {
		return run(t, "", append([]string{"intent", "list", "--server", server, "--token-file", tokenFile}, args...)...)
	}
	if out, code := admin("--run", "run-a"); code != 0 || !slices.Equal(firstOf(pages(out)), ids) {
		t.Fatalf("admin: %q exit %d", out, code)
	}
	if out, code := admin("--tenant", "globex"); code != 0 || len(firstOf(pages(out))) != 0 {
		t.Fatalf("admin --tenant globex: %q exit %d", out, code)
	}
	// A bad filter is refused, exit 1, with its code.
	if out, code := signed("--state", "running"); code != 1 || !strings.Contains(out, `"malformed"`) {
		t.Fatalf("--state running: %q exit %d", out, code)
	}
	if _, code := signed("--since", "yesterday"); code != 2 {
		t.Fatalf("--since yesterday: exit %d, want 2", code)
	}
}

func firstOf(ids, _ []string) []string { return ids }
