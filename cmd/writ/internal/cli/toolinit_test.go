package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/nodeagent"
	"github.com/writhq/writ/sandbox"
)

func TestToolInitWritesManifestRegistrationAllowlist(t *testing.T) {
	module := filepath.Join(t.TempDir(), "echo.wasm")
	os.WriteFile(module, []byte("\x00asm\x01\x00\x00\x00"), 0o644)
	for _, tc := range []struct {
		tier, flag, path string
		readOnly         bool
	}{
		{"process", "--command", "/bin/cat", false},
		{"bwrap", "--command", "/bin/cat", true},
		{"runc", "--command", "/bin/cat", true},
		{"gvisor", "--command", "/bin/cat", true},
		{"wasm", "--module", module, false},
	} {
		t.Run(tc.tier, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mytool")
			out, err := runCmd(t, newToolInit, "mytool", "--tier", tc.tier, tc.flag, tc.path, "--dir", dir)
			if err != nil {
				t.Fatal(err)
			}
			var f toolInitFiles
			if err := jsonx.UnmarshalLenient([]byte(out), &f); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if f.Manifest != filepath.Join(dir, "allowlist", "mytool.json") || f.Registration != filepath.Join(dir, "registration.json") {
				t.Fatalf("wrote %+v", f)
			}
			// The allowlist folder is one an agent accepts, with the manifest.
			a, err := nodeagent.LoadAllowlist(f.Allowlist)
			if err != nil {
				t.Fatal(err)
			}
			e, ok := a.Lookup("mytool")
			if !ok || e.Hash != f.Hash || e.Manifest.Tier != tc.tier {
				t.Fatalf("allowlist entry %+v ok=%v, want tier %s hash %s", e, ok, tc.tier, f.Hash)
			}
			if got := e.Manifest.Module + func() string {
				if e.Manifest.Command != nil {
					return e.Manifest.Command.Path
				}
				return ""
			}(); got != tc.path {
				t.Fatalf("manifest runs %q, want %q", got, tc.path)
			}
			if (len(e.Manifest.ReadOnly) > 0) != tc.readOnly {
				t.Fatalf("read_only %v", e.Manifest.ReadOnly)
			}
			if e.Manifest.Limits != sandbox.DefaultLimits() {
				t.Fatalf("limits %+v, want the defaults spelled out", e.Manifest.Limits)
			}
			// The registration carries the same manifest: tool hash agrees.
			hashOut, err := runCmd(t, newToolHash, f.Registration)
			if err != nil || !strings.Contains(hashOut, `"hash":"`+f.Hash+`"`) {
				t.Fatalf("tool hash of the registration: %s %v, want %s", hashOut, err, f.Hash)
			}
			var reg struct {
				Name        string         `json:"name"`
				InputSchema map[string]any `json:"input_schema"`
			}
			b, _ := os.ReadFile(f.Registration)
			if err := jsonx.UnmarshalLenient(b, &reg); err != nil || reg.Name != "mytool" || reg.InputSchema["type"] != "object" {
				t.Fatalf("registration %s: %v", b, err)
			}
			if !strings.Contains(strings.Join(f.Next, "\n"), "--allowlist "+f.Allowlist) {
				t.Fatalf("next commands %q do not start writ dev with the allowlist", f.Next)
			}
		})
	}
}

func TestToolInitRefuses(t *testing.T) {
	tmp := t.TempDir()
	module := filepath.Join(tmp, "echo.wasm")
	os.WriteFile(module, []byte("\x00asm"), 0o644)
	notExec := filepath.Join(tmp, "data.txt")
	os.WriteFile(notExec, []byte("x"), 0o644)
	taken := filepath.Join(tmp, "taken")
	if _, err := runCmd(t, newToolInit, "taken", "--tier", "process", "--command", "/bin/cat", "--dir", taken); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not an id", []string{"My Tool", "--tier", "process", "--command", "/bin/cat"}, `tool name "My Tool"`},
		{"path as name", []string{"../x", "--tier", "process", "--command", "/bin/cat"}, `tool name "../x"`},
		{"unknown tier", []string{"t", "--tier", "docker", "--command", "/bin/cat"}, `--tier "docker"`},
		{"no tier", []string{"t", "--command", "/bin/cat"}, `--tier ""`},
		{"wasm with command", []string{"t", "--tier", "wasm", "--command", "/bin/cat"}, "give --module"},
		{"wasm without module", []string{"t", "--tier", "wasm"}, "give --module"},
		{"process with module", []string{"t", "--tier", "process", "--module", module}, "give --command"},
		{"missing command", []string{"t", "--tier", "process", "--command", filepath.Join(tmp, "nope")}, "no such file"},
		{"command not executable", []string{"t", "--tier", "process", "--command", notExec}, "not executable"},
		{"command a folder", []string{"t", "--tier", "bwrap", "--command", tmp}, "not a regular file"},
		{"existing files", []string{"taken", "--tier", "process", "--command", "/bin/cat", "--dir", taken}, "exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			args := tc.args
			if !strings.Contains(strings.Join(args, " "), "--dir") {
				args = append(args, "--dir", dir)
			}
			out, err := runCmd(t, newToolInit, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, %v; want an error containing %q", out, err, tc.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Fatalf("%s was created by a refused init", dir)
			}
		})
	}
	// The refused second init left the first one's files as they were.
	if _, err := nodeagent.LoadAllowlist(filepath.Join(taken, "allowlist")); err != nil {
		t.Fatal(err)
	}
}

func TestReadDevAllowlist(t *testing.T) {
	good := t.TempDir()
	os.Chmod(good, 0o755)
	manifest := `{"name":"mine","tier":"process","command":{"path":"/bin/cat"}}`
	os.WriteFile(filepath.Join(good, "mine.json"), []byte(manifest), 0o644)
	got, err := readDevAllowlist(good)
	if err != nil || string(got["mine"]) != manifest || len(got) != 1 {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := readDevAllowlist(""); err != nil || len(got) != 0 {
		t.Fatalf("no --allowlist: %v %v", got, err)
	}
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"does not parse", "broken.json", `{"name":"mine","tier":"process"`, "broken.json"},
		{"unknown field", "odd.json", `{"name":"odd","tier":"process","command":{"path":"/bin/cat"},"approval":true}`, "odd.json"},
		{"dev tool's name", "echo.json", `{"name":"echo","tier":"process","command":{"path":"/bin/cat"}}`, "dev tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644)
			if _, err := readDevAllowlist(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := readDevAllowlist(filepath.Join(good, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("a missing folder: %v", err)
	}
}
