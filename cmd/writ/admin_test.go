package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// TestAdminCLI manages a running writ dev with the admin commands: a tenant
// with a run budget, its orchestrator key, a tool, a policy; then intents of
// that tenant run against them.
func TestAdminCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	defer stopWritDev(t, dev)
	var creds struct {
		AdminToken string `json:"admin_token"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err := jsonx.UnmarshalLenient(b, &creds); err != nil || creds.AdminToken == "" {
		t.Fatalf("dev.json: %v", err)
	}
	// The admin token from the file writ dev writes: never on the command
	// line.
	tokenFile := filepath.Join(dir, "admin.token")
	if b, err := os.ReadFile(tokenFile); err != nil || strings.TrimSpace(string(b)) != creds.AdminToken {
		t.Fatalf("admin.token: %q %v", b, err)
	}
	admin := func(args ...string) (string, int) {
		return run(t, "", append(args, "--server", server, "--token-file", tokenFile)...)
	}
	keys := t.TempDir()
	if _, code := run(t, "", "keygen", "hmac", "--id", "acme-orch", "--dir", keys); code != 0 {
		t.Fatal("keygen")
	}
	policy := writeFile(t, keys, "policy.cedar", `@id("acme.invoke")
permit (principal, action == Writ::Action::"invoke", resource)
when { principal.tenant == "acme" };
`)
	tool := writeFile(t, keys, "greet.json", `{"name":"greet","input_schema":{"type":"object","required":["name"]},"manifest":{"name":"greet","tier":"wasm","module":"/opt/greet.wasm"}}`)
	for _, args := range [][]string{
		{"tenant", "put", "acme", "--run-budget", "1"},
		{"key", "add", "--tenant", "acme", "--id", "acme-orch", "--secret-file", filepath.Join(keys, "acme-orch.key")},
		{"tool", "apply", "-f", tool},
		{"policy", "apply", "-f", policy},
	} {
		if out, code := admin(args...); code != 0 || out != "{\"ok\":true}\n" {
			t.Fatalf("writ %s: %q exit %d", strings.Join(args, " "), out, code)
		}
	}
	if out, code := run(t, "", "tenant", "put", "x", "--server", server, "--token", "wrong"); code != 1 || !strings.Contains(out, "unauthorized") {
		t.Fatalf("wrong token: %q exit %d", out, code)
	}
	// Tokens and sessions: a viewer token is listed (without its secret),
	// and no session is open yet.
	viewer, code := admin("token", "create", "--role", "viewer", "-o", "text")
	if code != 0 || !strings.HasPrefix(viewer, "wu1.") {
		t.Fatalf("token create: %q exit %d", viewer, code)
	}
	if out, code := admin("token", "list"); code != 0 || !strings.Contains(out, `"role":"viewer"`) || strings.Contains(out, strings.TrimSpace(viewer)) {
		t.Fatalf("token list: %q exit %d", out, code)
	}
	if out, code := admin("session", "list"); code != 0 || !strings.Contains(out, `"sessions":[]`) {
		t.Fatalf("session list: %q exit %d", out, code)
	}
	if out, code := admin("session", "revoke", "0123456789abcdef"); code != 1 || !strings.Contains(out, "not_found") {
		t.Fatalf("session revoke of no session: %q exit %d", out, code)
	}
	// -o text: tables for the listings, labelled lines for one node, and a
	// refusal as one line.
	if out, code := admin("token", "list", "-o", "text"); code != 0 || !strings.HasPrefix(out, "ID ") || !strings.Contains(out, " viewer ") || strings.Contains(out, strings.TrimSpace(viewer)) {
		t.Fatalf("token list -o text: %q exit %d", out, code)
	}
	var nodes struct {
		Nodes []struct{ ID, Name string }
	}
	if out, code := admin("nodes", "list"); code != 0 || jsonx.UnmarshalLenient([]byte(out), &nodes) != nil || len(nodes.Nodes) != 1 {
		t.Fatalf("nodes list: %q exit %d", out, code)
	}
	if out, code := admin("nodes", "list", "-o", "text"); code != 0 || !strings.HasPrefix(out, "NAME ") ||
		!strings.Contains(out, nodes.Nodes[0].Name+"  "+nodes.Nodes[0].ID+"  ready ") {
		t.Fatalf("nodes list -o text: %q exit %d", out, code)
	}
	if out, code := admin("nodes", "show", nodes.Nodes[0].ID, "-o", "text"); code != 0 || !regexp.MustCompile(`(?m)^status:\s+ready$`).MatchString(out) {
		t.Fatalf("nodes show -o text: %q exit %d", out, code)
	}
	if out, code := admin("session", "revoke", "0123456789abcdef", "-o", "text"); code != 1 || !strings.HasPrefix(out, "refused: not_found: ") {
		t.Fatalf("session revoke -o text of no session: %q exit %d", out, code)
	}
	if out, code := admin("policy", "apply", "-f", tool); code != 1 || !strings.Contains(out, "malformed") {
		t.Fatalf("a policy that does not parse: %q exit %d", out, code)
	}
	submit := func(tool, params string) string {
		intent, code := run(t, "", "intent", "sign", "--key", "acme-orch="+filepath.Join(keys, "acme-orch.key"),
			"--tenant", "acme", "--principal", "bot", "--run", "run-1", "--tool", tool, "--params", params)
		if code != 0 {
			t.Fatal("intent sign")
		}
		out, _ := run(t, intent, "intent", "submit", "--server", server, "--wait", "60s")
		return out
	}
	// No node's owner allowed greet: refused at once, without using budget.
	// The answer names the ready node and why it could not take it.
	if out := submit("greet", `{"name":"ada"}`); !strings.Contains(out, `"state":"rejected"`) || !strings.Contains(out, `"no_eligible_node"`) ||
		!strings.Contains(out, "1 ready: ") || !strings.Contains(out, "tool greet is not in its allowlist") {
		t.Fatalf("a tool no node allows: %s", out)
	}
	if out := submit("echo", `{"name":"ada"}`); !strings.Contains(out, `"state":"completed"`) || !strings.Contains(out, `"acme.invoke"`) {
		t.Fatalf("first intent: %s", out)
	}
	if out := submit("echo", `{"name":"bob"}`); !strings.Contains(out, `"state":"rejected"`) || !strings.Contains(out, `"budget_exhausted"`) {
		t.Fatalf("second intent of a run with a budget of 1: %s", out)
	}
}
