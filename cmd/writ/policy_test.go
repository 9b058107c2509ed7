package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
)

// TestPolicyCLI: validate and test run offline with exit 1 on a failure;
// get, history, rollback and dry-run work against writ dev.
func TestPolicyCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.cedar", `@id("echo.only")
permit (principal, action == Writ::Action::"invoke", resource == Writ::Tool::"echo")
when { principal.tenant == "dev" };
`)
	bad := writeFile(t, dir, "bad.cedar", `permit (principal, action, resource);`)
	cases := writeFile(t, dir, "cases.json", `{"tools":{"echo":{"sandbox":"wasm"},"pay":{}},"cases":[
	  {"name":"echo","tenant":"dev","principal":"bot","tool":"echo","expect":"allow"},
	  {"name":"pay","tenant":"dev","principal":"bot","tool":"pay","expect":"deny"}]}`)
	wrong := writeFile(t, dir, "wrong.json", `{"tools":{"pay":{}},"cases":[{"name":"pay allowed","tenant":"dev","principal":"bot","tool":"pay","expect":"allow"}]}`)

	if out, code := run(t, "", "policy", "validate", good); code != 0 || !strings.Contains(out, `"valid":true`) || !strings.Contains(out, `"echo.only"`) {
		t.Fatalf("validate good: %q exit %d", out, code)
	}
	if out, code := run(t, "", "policy", "validate", bad, "-o", "text"); code != 1 || !strings.HasPrefix(out, "invalid: ") {
		t.Fatalf("validate bad: %q exit %d", out, code)
	}
	if out, code := run(t, "", "policy", "test", good, "--cases", cases, "-o", "text"); code != 0 || !strings.Contains(out, "2 of 2 cases pass") {
		t.Fatalf("test: %q exit %d", out, code)
	}
	if out, code := run(t, "", "policy", "test", good, "--cases", wrong); code != 1 || !strings.Contains(out, `"failed":1`) {
		t.Fatalf("test with a wrong expectation: %q exit %d", out, code)
	}

	addr, raftAddr := freePort(t), freePort(t)
	dev := startWritDev(t, filepath.Join(dir, "dev"), addr, raftAddr)
	defer stopWritDev(t, dev)
	admin := func(args ...string) (string, int) {
		return run(t, "", append(args, "--server", "http://"+addr, "--token-file", filepath.Join(dir, "dev", "admin.token"))...)
	}
	var before struct {
		Version uint64 `json:"version"`
		Text    string `json:"text"`
	}
	if out, code := admin("policy", "get"); code != 0 || jsonx.UnmarshalLenient([]byte(out), &before) != nil || before.Version == 0 {
		t.Fatalf("get: %q exit %d", out, code)
	}
	if out, code := admin("policy", "get", "-o", "text"); code != 0 || out != before.Text {
		t.Fatalf("get -o text: %q exit %d", out, code)
	}
	if out, code := admin("policy", "dry-run", good, "--since", "1h", "-o", "text"); code != 0 || !strings.Contains(out, "decisions would change") {
		t.Fatalf("dry-run: %q exit %d", out, code)
	}
	if out, code := admin("policy", "apply", "-f", good); code != 0 {
		t.Fatalf("apply: %q exit %d", out, code)
	}
	if out, code := admin("policy", "history", "-o", "text"); code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, "current") {
		t.Fatalf("history: %q exit %d", out, code)
	}
	if out, code := admin("policy", "rollback", "999999"); code != 1 || !strings.Contains(out, "not_found") {
		t.Fatalf("rollback to no version: %q exit %d", out, code)
	}
	if out, code := admin("policy", "rollback", jsonNumber(before.Version)); code != 0 {
		t.Fatalf("rollback: %q exit %d", out, code)
	}
	if out, code := admin("policy", "get", "-o", "text"); code != 0 || out != before.Text {
		t.Fatalf("after rollback: %q exit %d", out, code)
	}
}

func jsonNumber(n uint64) string { b, _ := jsonx.Marshal(n); return string(b) }
