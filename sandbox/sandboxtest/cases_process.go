package sandboxtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
)

func testArgvTemplate(t *testing.T, h Harness) {
	m := h.Manifest("{{x}}", "lit", "--n={{n}}")
	o := run(t, h, m, `{"op":"argv","x":"a b; $(id) | cat","n":7}`, "")
	want(t, o, sandbox.StatusOK)
	if got, want := string(o.Output), `["a b; $(id) | cat","lit","--n=7"]`; got != want {
		t.Errorf("argv: got %s, want %s", got, want)
	}
	o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
		Params: jsontext.Value(`{"op":"argv","x":"--help","n":1}`), Workspace: workspace(t)})
	isRefused(t, o, err, sandbox.ErrDashArg)
	m.AllowDashArgs = true
	o = run(t, h, m, `{"op":"argv","x":"--help","n":1}`, "")
	want(t, o, sandbox.StatusOK)
}

func testInterpreters(t *testing.T, h Harness) {
	dir := t.TempDir()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		missingOnHost(t, "no /bin/sh on this host")
	}
	link := filepath.Join(dir, "innocent")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/bin/sh", link, "/usr/bin/env"} {
		m := h.Manifest("-c", "id")
		m.Command.Path = path
		o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
			Params: jsontext.Value(`{}`), Workspace: workspace(t)})
		isRefused(t, o, err, sandbox.ErrInterpreter)
	}
}

func testDescriptors(t *testing.T, h Harness) {
	// A descriptor the agent holds without close-on-exec must not reach the tool.
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	o := run(t, h, h.Manifest(), `{"op":"fds"}`, "")
	want(t, o, sandbox.StatusOK)
	if string(o.Output) != "0 1 2" {
		t.Errorf("descriptors open in the tool: got %q, want \"0 1 2\"", o.Output)
	}
}

// testGrandchild: a grandchild that lingers after the tool exited, in the
// tool's process group or in a session of its own, dies with the tool.
func testGrandchild(t *testing.T, h Harness) {
	for _, op := range []string{"spawngroup", "spawn"} {
		ws := workspace(t)
		o := run(t, h, h.Manifest(), `{"op":"`+op+`","ms":700,"path":"alive"}`, ws)
		want(t, o, sandbox.StatusOK)
		time.Sleep(1500 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(ws, "alive")); err == nil {
			t.Errorf("%s: a grandchild outlived the tool and wrote to the workspace", op)
		}
	}
}

// testRlimits reads the tool's own limits (getrlimit): CPU seconds (soft at
// the limit, hard a second later), open files, no core files, and a finite
// address space no smaller than the memory limit.
func testRlimits(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) {
		l.CPUSeconds, l.OpenFiles, l.MemoryBytes = 13, 77, 200<<20
	})
	o := run(t, h, m, `{"op":"rlimits"}`, "")
	want(t, o, sandbox.StatusOK)
	limits := map[string][2]string{}
	for _, line := range strings.Split(string(o.Output), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "Max" {
			// "Max open files  77  77  files": the name is what precedes
			// the two values and the unit.
			n := len(f)
			if f[n-1] != "bytes" && f[n-1] != "seconds" && f[n-1] != "files" && f[n-1] != "processes" {
				n++ // no unit
			}
			limits[strings.Join(f[1:n-3], " ")] = [2]string{f[n-3], f[n-2]}
		}
	}
	for name, v := range map[string][2]string{"cpu time": {"13", "14"}, "open files": {"77", "77"},
		"core file size": {"0", "0"}} {
		if limits[name] != v {
			t.Errorf("%s: got soft %q hard %q, want %q %q", name, limits[name][0], limits[name][1], v[0], v[1])
		}
	}
	as := limits["address space"]
	n, err := strconv.ParseInt(as[0], 10, 64)
	if err != nil || as[0] != as[1] || n < 200<<20 {
		t.Errorf("address space: got soft %q hard %q, want equal, finite and at least %d", as[0], as[1], 200<<20)
	}
}

// testReadOnlyGrant: a host directory the manifest lists in read_only can
// be read by the tool and not written; the wasm tier, which grants nothing
// but the workspace, refuses the manifest.
func testReadOnlyGrant(t *testing.T, h Harness) {
	dir, err := os.MkdirTemp("", "writ-grant-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("granted"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := h.Manifest()
	m.ReadOnly = []string{dir}
	if !h.Argv {
		o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
			Params: jsontext.Value(`{"op":"echo"}`), Workspace: workspace(t)})
		isRefused(t, o, err, nil)
		return
	}
	o := run(t, h, m, `{"op":"read","path":"`+filepath.Join(dir, "data")+`"}`, "")
	want(t, o, sandbox.StatusOK)
	if string(o.Output) != "granted" {
		t.Errorf("read of a granted file: got %q", o.Output)
	}
	for _, p := range []string{filepath.Join(dir, "data"), filepath.Join(dir, "new")} {
		o = run(t, h, m, `{"op":"write","path":"`+p+`","data":"changed"}`, "")
		if o.Status == sandbox.StatusOK {
			t.Errorf("ESCAPED: wrote %s in a read-only grant", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data")); string(b) != "granted" {
		t.Errorf("ESCAPED: the granted file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Errorf("ESCAPED: a file was created in a read-only grant")
	}
}

func testWriteOutside(t *testing.T, h Harness) {
	outside := filepath.Join(t.TempDir(), "escaped")
	for _, p := range []string{outside, "../escaped", "/etc/writ-escaped"} {
		o := run(t, h, h.Manifest(), `{"op":"write","path":"`+p+`","data":"x"}`, "")
		if o.Status == sandbox.StatusOK {
			if _, err := os.Stat(outside); err == nil {
				t.Errorf("write to %s reached the host", p)
			}
		}
	}
	if _, err := os.Stat("/etc/writ-escaped"); err == nil {
		os.Remove("/etc/writ-escaped")
		t.Errorf("write to /etc reached the host")
	}
	o := run(t, h, h.Manifest(), `{"op":"read","path":"/etc/shadow"}`, "")
	if o.Status == sandbox.StatusOK && len(o.Output) > 0 {
		t.Errorf("read /etc/shadow: got %d bytes", len(o.Output))
	}
}

func testCPULimit(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.CPUSeconds = 1; l.TimeoutMS = 60_000 })
	start := time.Now()
	o := run(t, h, m, `{"op":"spin"}`, "")
	want(t, o, sandbox.StatusTimeout)
	if o.Reason != "cpu" {
		t.Errorf("reason: got %q, want cpu", o.Reason)
	}
	elapsed(t, start, 45*time.Second) // a loaded host gives it less than a core
}

// testTraceMe: a tool thread that makes itself traced by the agent
// (PTRACE_TRACEME) neither stops for good at its next signal nor, killed,
// holds the run open as a zombie only its tracer can reap. Where seccomp
// refuses ptrace the tool just reports it.
func testTraceMe(t *testing.T, h Harness) {
	for _, c := range []struct {
		params string
		status sandbox.Status
	}{
		{`{"op":"traceme"}`, sandbox.StatusOK},
		{`{"op":"traceme","ms":60000}`, sandbox.StatusTimeout}, // killed while a thread is traced
	} {
		m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.TimeoutMS = 3000 })
		ws := workspace(t)
		done := make(chan sandbox.Outcome, 1)
		go func() { done <- runNoFatal(h, m, c.params, ws) }()
		select {
		case o := <-done:
			want(t, o, c.status)
			if got := string(o.Output); got != "traced" && !(h.Seccomp && strings.HasPrefix(got, "traceme: operation not permitted")) {
				t.Errorf("%s: output %q, want traced (or refused by seccomp)", c.params, got)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the run did not end 60 s after a 3 s timeout", c.params)
		}
	}
}

// runNoFatal runs the tool from another goroutine, where t.Fatal may not be
// called; a driver error becomes an error outcome.
func runNoFatal(h Harness, m sandbox.Manifest, params, ws string) sandbox.Outcome {
	o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
		Params: jsontext.Value(params), Workspace: ws})
	if err != nil && o.Status != sandbox.StatusRefused {
		o.Status, o.Reason = sandbox.StatusError, err.Error()
	}
	return o
}
