package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
)

// TestImportMCPRunsUnderDev: writ tool import-mcp reads the test MCP
// server's tools (starting it under bwrap), writes their manifests and
// registrations; writ dev's agent holds the manifests; each call runs the
// server under bwrap and ends with a receipt whose result names the
// server's digest and the tool; the server cannot reach a destination
// outside its allowlist.
func TestImportMCPRunsUnderDev(t *testing.T) {
	t.Parallel()
	testtier.Slow(t, "builds the test MCP server, then writ dev's agent runs it under bwrap for each call")
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bwrap is missing under CI=true (make deps installs bubblewrap)")
		}
		t.Skip("SKIPPING: bwrap is not installed (run with CI=true to make this a failure)")
	}
	work := t.TempDir()
	// bwrap, as the agent's run-as user, finds the server by its path.
	for _, d := range []string{filepath.Dir(work), work} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server := filepath.Join(work, "mcpserver")
	build := exec.Command("go", "build", "-trimpath", "-o", server, "../../nodeagent/mcptier/testdata/mcpserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test server: %v\n%s", err, b)
	}
	content, _ := os.ReadFile(server)
	sum := sha256.Sum256(content)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	dir := filepath.Join(work, "srv")
	out, code := run(t, "", "-o", "text", "tool", "import-mcp", "--prefix", "srv", "--command", server,
		"--allow", "api.example.com:443", "--dir", dir)
	allow := filepath.Join(dir, "allowlist")
	if code != 0 || !strings.Contains(out, "Read 4 tools") || !strings.Contains(out, "writ dev --allowlist "+allow) {
		t.Fatalf("import-mcp: exit %d, %s", code, out)
	}
	for _, name := range []string{"srv.echo", "srv.fail", "srv.connect"} {
		if !strings.Contains(out, filepath.Join(allow, name+".json")+"  sha256:") {
			t.Errorf("import-mcp printed no allowlist line for %s: %s", name, out)
		}
	}
	var reg struct {
		Name        string         `json:"name"`
		InputSchema jsontext.Value `json:"input_schema"`
		Manifest    struct {
			Tier string `json:"tier"`
			MCP  struct {
				Tool      string `json:"tool"`
				InnerTier string `json:"inner_tier"`
			} `json:"mcp"`
		} `json:"manifest"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "registrations", "srv.echo.json"))
	if err := jsonx.UnmarshalLenient(b, &reg); err != nil || reg.Name != "srv.echo" || reg.Manifest.Tier != "mcp" ||
		reg.Manifest.MCP.Tool != "echo" || reg.Manifest.MCP.InnerTier != "bwrap" || !strings.Contains(string(reg.InputSchema), `"text"`) {
		t.Fatalf("registration %s (%v): want srv.echo of tier mcp calling echo in bwrap, echo's schema copied", b, err)
	}
	// writ sandbox run tries a manifest of tier mcp on this host.
	got, code := run(t, `{"text":"here"}`, "sandbox", "run", "--tier", "mcp", "--manifest", filepath.Join(allow, "srv.echo.json"))
	if code != 0 || !strings.Contains(got, `"output":"echo: here"`) || !strings.Contains(got, `"tool":"echo"`) || !strings.Contains(got, digest) {
		t.Fatalf("sandbox run --tier mcp: exit %d, %s", code, got)
	}
	// A second import into the same folder is refused and changes nothing.
	if _, code := run(t, "", "tool", "import-mcp", "--prefix", "srv", "--command", server, "--dir", dir); code == 0 {
		t.Fatal("a second import into the same folder succeeded")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "registrations", "srv.echo.json")); string(after) != string(b) {
		t.Fatal("a refused import changed a registration")
	}

	data := filepath.Join(work, "writ-dev")
	addr, raftAddr := freePort(t), freePort(t)
	srv := "http://" + addr
	dev, _ := startDevBanner(t, writBin, "--data-dir", data, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir, "--allowlist", allow)
	defer stopWritDev(t, dev)
	token := filepath.Join(data, "admin.token")
	// --register sends the registrations (here into a second folder: the
	// same manifests, so the same hashes as the agent's allowlist).
	out, code = run(t, "", "tool", "import-mcp", "--prefix", "srv", "--command", server, "--allow", "api.example.com:443",
		"--dir", filepath.Join(work, "again"), "--register", "--server", srv, "--token-file", token)
	if code != 0 || strings.Count(out, `"registered": true`)+strings.Count(out, `"registered":true`) != 4 {
		t.Fatalf("import-mcp --register: exit %d, %s", code, out)
	}
	key := "dev-orchestrator=" + filepath.Join(data, "orchestrator.key")
	call := func(tool, params string, exit int) (string, map[string]any) {
		t.Helper()
		intent, code := run(t, "", "intent", "sign", "--key", key, "--tenant", "dev", "--principal", "me", "--run", "run-1",
			"--tool", tool, "--params", params)
		if code != 0 {
			t.Fatalf("intent sign: exit %d", code)
		}
		answer, code := run(t, intent, "intent", "submit", "--server", srv, "--wait", "60s")
		var a map[string]any
		if code != exit || jsonx.UnmarshalLenient([]byte(answer), &a) != nil {
			t.Fatalf("submit %s: exit %d, %s", tool, code, answer)
		}
		return answer, a
	}
	answer, a := call("srv.echo", `{"text":"through writ"}`, 0)
	result, _ := a["result"].(map[string]any)
	if a["state"] != "completed" || result["sandbox"] != "mcp" {
		t.Fatalf("srv.echo: %s; want completed in the mcp tier", answer)
	}
	mcp, _ := result["mcp"].(map[string]any)
	if mcp["tool"] != "echo" || mcp["server"] != digest || mcp["inner_tier"] != "bwrap" {
		t.Fatalf("srv.echo's result names %v, want echo, %s, bwrap", mcp, digest)
	}
	id, _ := a["intent_id"].(string)
	got, code = run(t, "", "-o", "text", "intent", "get", id, "--server", srv, "--tenant", "dev", "--key", key)
	if code != 0 || !strings.Contains(got, "echo: through writ") {
		t.Fatalf("intent get: exit %d, %q; want the tool's result content", code, got)
	}
	idx, _ := a["receipt_index"].(float64)
	receipt, code := run(t, "", "receipt", "get", fmt.Sprint(int64(idx)), "--server", srv, "--tenant", "dev", "--key", key)
	if code != 0 || !strings.Contains(receipt, digest) || !strings.Contains(receipt, `"tool":"echo"`) {
		t.Fatalf("receipt: exit %d, %s; want it to name the server's digest and the tool", code, receipt)
	}

	// A destination outside the allowlist is refused by the egress proxy,
	// and the signed result says so.
	answer, a = call("srv.connect", `{"host":"evil.example","port":443}`, 0)
	result, _ = a["result"].(map[string]any)
	egress, _ := result["egress"].(map[string]any)
	if a["state"] != "completed" || egress["refused"] != float64(1) || egress["allowed"] != float64(0) {
		t.Fatalf("srv.connect: %s; want one refused attempt", answer)
	}
	id, _ = a["intent_id"].(string)
	if got, _ := run(t, "", "-o", "text", "intent", "get", id, "--server", srv, "--tenant", "dev", "--key", key); !strings.Contains(got, "403") {
		t.Fatalf("srv.connect's output %q: want the proxy's refusal", got)
	}

	// A tool that reports an error is a failed intent (submit exits 4).
	answer, a = call("srv.fail", `{}`, 4)
	result, _ = a["result"].(map[string]any)
	if a["state"] != "failed" || result["status"] != "error" || result["exit_code"] != float64(1) {
		t.Fatalf("srv.fail: %s; want failed, status error, exit 1", answer)
	}
}
