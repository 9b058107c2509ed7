package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestSandboxRunEcho runs the echo WASM tool (a prepared tool, as make build
// builds it) through `writ sandbox run` and
// checks its output against the shared vectors' signed result, which records
// what echo writes for {"msg":"hello world"}.
func TestSandboxRunEcho(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The module TestMain built, as make build builds it.
	module := filepath.Join(toolsDir, "echo.wasm")
	manifest := writeFile(t, dir, "echo.json", `{"name":"echo","tier":"wasm","module":"`+module+`"}`)
	out, code := run(t, `{"msg":"hello world"}`, "sandbox", "run", "--tier", "wasm", "--manifest", manifest)
	if code != 0 {
		t.Fatalf("sandbox run: %q exit %d", out, code)
	}
	var got struct {
		Status, Output, Tier string
		OutputHash           string `json:"output_hash"`
		OutputBytes          int64  `json:"output_bytes"`
		Truncated            bool
	}
	if err := jsonx.UnmarshalLenient([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	// From ../shared/vectors/dispatch_result.json, "valid result".
	const wantHash = "sha256:b7a36c52572fa7e7222335d1e13944ebaa4d58491636feb39734f299d7195bbb"
	if got.Status != "ok" || got.Output != `{"msg":"hello world"}` || got.OutputHash != wantHash || got.OutputBytes != 21 || got.Tier != "wasm" {
		t.Errorf("got %+v", got)
	}
	if out, code := run(t, `{}`, "sandbox", "run", "--tier", "process", "--manifest", manifest); code != 2 {
		t.Errorf("a manifest run in another tier: %q exit %d, want a refusal (2)", out, code)
	}
}

// TestSandboxRunCommandTier runs the sandbox test tool in the process tier
// through `writ sandbox run`: the outcome carries the exit code and the
// tool's standard error; an interpreter is refused.
func TestSandboxRunCommandTier(t *testing.T) {
	t.Parallel()
	tool := sandboxtest.HostTool(t)
	d, err := process.New(process.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	dir := t.TempDir()
	manifest := writeFile(t, dir, "tool.json", `{"name":"testtool","tier":"process","command":{"path":"`+tool+`"}}`)
	out, code := run(t, `{"op":"exit","code":3,"msg":"bad input"}`, "sandbox", "run", "--tier", "process", "--manifest", manifest)
	var got struct {
		Status      string
		ExitCode    int    `json:"exit_code"`
		Stderr      string `json:"stderr"`
		StderrBytes int64  `json:"stderr_bytes"`
		Tier        string
		Reason      string
	}
	if err := jsonx.UnmarshalLenient([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	var usage struct {
		Usage struct {
			Wall int64 `json:"wall_ns"`
		} `json:"usage"`
	}
	jsonx.UnmarshalLenient([]byte(out), &usage)
	if code != 1 || got.Status != "error" || got.ExitCode != 3 || got.Stderr != "bad input" || got.StderrBytes != 9 ||
		got.Tier != "process" || usage.Usage.Wall <= 0 {
		t.Errorf("exit 3 with a message: writ exit %d, %+v", code, got)
	}
	sh := writeFile(t, dir, "sh.json", `{"name":"sh","tier":"process","command":{"path":"/bin/sh","args":["-c","id"]}}`)
	out, code = run(t, `{}`, "sandbox", "run", "--tier", "process", "--manifest", sh)
	got = struct {
		Status      string
		ExitCode    int    `json:"exit_code"`
		Stderr      string `json:"stderr"`
		StderrBytes int64  `json:"stderr_bytes"`
		Tier        string
		Reason      string
	}{}
	if err := jsonx.UnmarshalLenient([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if code != 1 || got.Status != "refused" || !strings.Contains(got.Reason, "interpreter denied") {
		t.Errorf("/bin/sh: writ exit %d, %+v", code, got)
	}
}
