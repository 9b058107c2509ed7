package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox"
)

func testExitCodes(t *testing.T, h Harness) {
	for _, code := range []int{0, 1, 3, 42} {
		o := run(t, h, h.Manifest(), `{"op":"exit","code":`+itoa(code)+`,"msg":"bye"}`, "")
		if o.ExitCode != code {
			t.Errorf("exit %d: got exit code %d (%s)", code, o.ExitCode, brief(o))
		}
		wantStatus := sandbox.StatusError
		if code == 0 {
			wantStatus = sandbox.StatusOK
		}
		want(t, o, wantStatus)
		if string(o.Stderr) != "bye" || o.StderrBytes != 3 {
			t.Errorf("stderr: got %q (%d bytes), want \"bye\"", o.Stderr, o.StderrBytes)
		}
		if o.Usage.Wall <= 0 {
			t.Errorf("usage: wall time %v, want the run's duration", o.Usage.Wall)
		}
	}
}

func testStdinParams(t *testing.T, h Harness) {
	params := `{"op":"echo","nested":{"a":[1,2,"três"]},"s":"$(id); rm -rf /"}`
	o := run(t, h, h.Manifest(), params, "")
	want(t, o, sandbox.StatusOK)
	if string(o.Output) != params {
		t.Errorf("stdin: got %q, want %q", o.Output, params)
	}
}

func testOutputHash(t *testing.T, h Harness) {
	for _, n := range []int{0, 1, 65536, 200_000} {
		m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.OutputBytes = 1 << 20 })
		o := run(t, h, m, `{"op":"flood","bytes":`+itoa(n)+`}`, "")
		want(t, o, sandbox.StatusOK)
		all := bytes.Repeat([]byte("x"), n)
		if o.OutputBytes != int64(n) || o.OutputHash != hashOf(all) || !bytes.Equal(o.Output, all) || o.Truncated {
			t.Errorf("%d bytes: got %d bytes, hash %s, truncated %v", n, o.OutputBytes, o.OutputHash, o.Truncated)
		}
	}
	// The default limit is 65,536 bytes.
	o := run(t, h, h.Manifest(), `{"op":"flood","bytes":65536}`, "")
	want(t, o, sandbox.StatusOK)
}

func testOutputCap(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.OutputBytes = 1000 })
	// One write of 5000 bytes: everything written is hashed and counted,
	// only the first 1000 bytes are kept.
	o := run(t, h, m, `{"op":"flood","bytes":5000}`, "")
	want(t, o, sandbox.StatusOutputLimit)
	if len(o.Output) != 1000 || !o.Truncated {
		t.Errorf("kept %d bytes truncated=%v, want 1000 and true", len(o.Output), o.Truncated)
	}
	if o.OutputBytes != 5000 || o.OutputHash != hashOf(bytes.Repeat([]byte("x"), 5000)) {
		t.Errorf("got %d bytes hash %s, want the hash of all 5000", o.OutputBytes, o.OutputHash)
	}
}

func testOutputFlood(t *testing.T, h Harness) {
	// A tool writing forever is stopped at the cap, long before its timeout.
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.TimeoutMS = 20_000 })
	start := time.Now()
	o := run(t, h, m, `{"op":"flood","bytes":-1}`, "")
	want(t, o, sandbox.StatusOutputLimit)
	elapsed(t, start, 10*time.Second)
	if int64(len(o.Output)) != sandbox.DefaultOutputBytes || o.OutputBytes <= sandbox.DefaultOutputBytes {
		t.Errorf("kept %d of %d bytes", len(o.Output), o.OutputBytes)
	}
}

func testTimeout(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.TimeoutMS = 300 })
	start := time.Now()
	o := run(t, h, m, `{"op":"sleep","ms":20000}`, "")
	want(t, o, sandbox.StatusTimeout)
	elapsed(t, start, 8*time.Second)
	if o.Reason != "wall" {
		t.Errorf("reason: got %q, want wall", o.Reason)
	}
}

func testSpin(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.TimeoutMS = 500 })
	start := time.Now()
	o := run(t, h, m, `{"op":"spin"}`, "")
	want(t, o, sandbox.StatusTimeout)
	elapsed(t, start, 8*time.Second)
}

func testCancel(t *testing.T, h Harness) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	o := runCtx(ctx, t, h, h.Manifest(), `{"op":"sleep","ms":20000}`, "", nil)
	want(t, o, sandbox.StatusError)
	elapsed(t, start, 8*time.Second)
	if o.Reason != "canceled" {
		t.Errorf("reason: got %q, want canceled", o.Reason)
	}
}

func testWorkspace(t *testing.T, h Harness) {
	ws := workspace(t)
	o := run(t, h, h.Manifest(), `{"op":"write","path":"note.txt","data":"kept"}`, ws)
	want(t, o, sandbox.StatusOK)
	if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("workspace file after run: %q, %v", b, err)
	}
	// The next invocation with the same workspace sees it; a fresh one does not.
	o = run(t, h, h.Manifest(), `{"op":"read","path":"note.txt"}`, ws)
	want(t, o, sandbox.StatusOK)
	if string(o.Output) != "kept" {
		t.Errorf("second run read %q, want kept", o.Output)
	}
	o = run(t, h, h.Manifest(), `{"op":"read","path":"note.txt"}`, "")
	want(t, o, sandbox.StatusError)
	// A workspace that does not exist is refused.
	_, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: h.Manifest(),
		Params: jsontext.Value(`{"op":"echo"}`), Workspace: filepath.Join(ws, "missing")})
	if err == nil {
		t.Errorf("missing workspace: got no error")
	}
	if h.NonRootAgent && h.DiskQuotaAnyAgent && !t.Failed() {
		// An agent that is not root copies the workspace in and out of
		// the sandbox (bwrap): the same again as uid 65534.
		asNobody(t)
	}
}

func testEnvScrub(t *testing.T, h Harness) {
	t.Setenv("WRIT_AGENT_SECRET", "s3cret")
	m := h.Manifest()
	m.Env = []string{"ALLOWED", "UNSET"}
	env := map[string]string{"ALLOWED": "yes", "OTHER": "no", "PATH": "/usr/bin"}
	o := runCtx(context.Background(), t, h, m, `{"op":"env"}`, "", env)
	want(t, o, sandbox.StatusOK)
	var got []string
	for _, kv := range strings.Split(string(o.Output), "\n") {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(h.ExtraEnv, name) {
			got = append(got, kv)
		}
	}
	if strings.Join(got, "\n") != "ALLOWED=yes" {
		t.Errorf("environment: got %q, want exactly ALLOWED=yes (plus %q)", o.Output, h.ExtraEnv)
	}
}

func testWrongTier(t *testing.T, h Harness) {
	m := sandbox.Manifest{Name: "x", Tier: sandbox.TierWasm, Module: "/x.wasm"}
	if h.Driver.Name() == sandbox.TierWasm {
		m = sandbox.Manifest{Name: "x", Tier: sandbox.TierProcess, Command: &sandbox.Command{Path: "/bin/true"}}
	}
	o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: workspace(t)})
	isRefused(t, o, err, sandbox.ErrInvalidManifest)
}

func testBadParams(t *testing.T, h Harness) {
	for _, p := range []string{`[1]`, `{"op":"echo","op":"exit"}`, `{"op":`} {
		o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: h.Manifest(),
			Params: jsontext.Value(p), Workspace: workspace(t)})
		isRefused(t, o, err, sandbox.ErrParams)
	}
}

func testUnavailable(t *testing.T, h Harness) {
	if err := h.Unavailable.Available(); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("Available: got %v, want an ErrUnavailable reason", err)
	}
	o, err := h.Unavailable.Run(context.Background(), sandbox.Invocation{Manifest: h.Manifest(),
		Params: jsontext.Value(`{"op":"echo"}`), Workspace: workspace(t)})
	isRefused(t, o, err, sandbox.ErrUnavailable)
	if o.Tier != h.Unavailable.Name() {
		t.Errorf("refusal from tier %q, want %q", o.Tier, h.Unavailable.Name())
	}
}

func testConcurrent(t *testing.T, h Harness) {
	const n = 8
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			params := `{"op":"echo","i":` + itoa(i) + `}`
			o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: h.Manifest(),
				Params: jsontext.Value(params), Workspace: workspace(t)})
			if err != nil || o.Status != sandbox.StatusOK || string(o.Output) != params {
				errs <- fmt.Sprintf("invocation %d: %v %s", i, err, brief(o))
				return
			}
			errs <- ""
		}()
	}
	for i := 0; i < n; i++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// testSmallMemory: a Go tool starts and runs under small memory limits
// (each tier's address-space rlimit must leave a Go runtime room to start).
func testSmallMemory(t *testing.T, h Harness) {
	for _, mib := range []int64{16, 64, 128, 192} {
		m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.MemoryBytes = mib << 20 })
		o := run(t, h, m, `{"op":"echo"}`, "")
		if o.Status != sandbox.StatusOK {
			t.Errorf("memory_bytes %d MiB: %s", mib, brief(o))
		}
	}
}

func itoa(n int) string { b, _ := jsonx.Marshal(n); return string(b) }
