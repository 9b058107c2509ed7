package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// TestToolInitRunsUnderDev is the walkthrough of docs/tools.md with the real
// binary: writ tool init a process-tier tool, writ dev --allowlist its
// folder, register it with the admin token's file, and an intent for it
// completes with the tool's output.
func TestToolInitRunsUnderDev(t *testing.T) {
	t.Parallel()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	if cat, err = filepath.Abs(cat); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	tool := filepath.Join(work, "mytool")
	out, code := run(t, "", "-o", "text", "tool", "init", "mytool", "--tier", "process", "--command", cat, "--dir", tool)
	allow := filepath.Join(tool, "allowlist")
	if code != 0 || !strings.Contains(out, "writ dev --data-dir ") || !strings.Contains(out, "--allowlist "+allow) {
		t.Fatalf("tool init: exit %d, %s", code, out)
	}
	// A second init into the same folder is refused and changes nothing.
	before, _ := os.ReadFile(filepath.Join(allow, "mytool.json"))
	if _, code := run(t, "", "tool", "init", "mytool", "--tier", "wasm", "--module", filepath.Join(toolsDir, "echo.wasm"), "--dir", tool); code != 2 {
		t.Fatalf("a second init: exit %d, want 2", code)
	}
	if after, _ := os.ReadFile(filepath.Join(allow, "mytool.json")); string(after) != string(before) {
		t.Fatalf("a refused init changed the manifest: %s", after)
	}

	// A folder with a manifest that does not parse refuses the start, naming it.
	bad := filepath.Join(work, "bad")
	os.Mkdir(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "broken.json"), []byte(`{"name":"broken","tier":"process"}`), 0o644)
	refused := exec.Command(writBin, "dev", "--data-dir", filepath.Join(work, "refused"), "--addr", freePort(t), "--allowlist", bad)
	refused.Env = withoutWritEnv()
	msg, err := refused.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), filepath.Join(bad, "broken.json")) {
		t.Fatalf("writ dev with a broken manifest: %v, %s", err, msg)
	}

	dir := filepath.Join(work, "writ-dev")
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev, _ := startDevBanner(t, writBin, "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir, "--allowlist", allow)
	defer stopWritDev(t, dev)

	// The dev agent's allowlist holds the user's manifest byte for byte.
	if held, err := os.ReadFile(filepath.Join(dir, "agent-tools", "mytool.json")); err != nil || string(held) != string(before) {
		t.Fatalf("the dev agent's allowlist holds %q (%v), want %q", held, err, before)
	}
	token := filepath.Join(dir, "admin.token")
	if out, code := run(t, "", "tool", "apply", "-f", filepath.Join(tool, "registration.json"), "--server", server, "--token-file", token); code != 0 {
		t.Fatalf("tool apply: exit %d, %s", code, out)
	}
	key := "dev-orchestrator=" + filepath.Join(dir, "orchestrator.key")
	intent, code := run(t, "", "intent", "sign", "--key", key, "--tenant", "dev", "--principal", "me", "--run", "run-1",
		"--tool", "mytool", "--params", `{"msg":"mine"}`)
	if code != 0 {
		t.Fatalf("intent sign: exit %d", code)
	}
	answer, code := run(t, intent, "intent", "submit", "--server", server, "--wait", "30s")
	var r struct {
		IntentID string `json:"intent_id"`
		State    string `json:"state"`
		Result   struct {
			Sandbox string `json:"sandbox"`
		} `json:"result"`
	}
	if code != 0 || jsonx.UnmarshalLenient([]byte(answer), &r) != nil || r.State != "completed" || r.Result.Sandbox != "process" {
		t.Fatalf("submit: exit %d, %s; want completed in the process tier", code, answer)
	}
	got, code := run(t, "", "-o", "text", "intent", "get", r.IntentID, "--server", server, "--tenant", "dev", "--key", key)
	if code != 0 || !strings.Contains(got, `{"msg":"mine"}`) {
		t.Fatalf("intent get: exit %d, %q; want cat's output, the params", code, got)
	}
}
