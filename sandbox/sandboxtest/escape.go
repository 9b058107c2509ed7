package sandboxtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
)

// secret is what the escape cases try to read from outside the workspace.
const secret = "WRIT-ESCAPE-SECRET"

// Escape runs the escape suite against h: each case attacks the tier and
// passes only if the attack is contained. Cases a tier does not claim to
// meet (the process tier does not isolate the filesystem on Linux) are
// skipped with the reason, never passed. Under -short the suite is skipped
// (make test runs it).
func Escape(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("not in -short: the escape suite")
	}
	if err := h.Driver.Available(); err != nil {
		t.Fatalf("driver %s not available: %v", h.Driver.Name(), err)
	}
	fsCase := func(fn func(*testing.T, Harness)) func(*testing.T, Harness) {
		return func(t *testing.T, h Harness) {
			if !h.IsolatesFilesystem {
				t.Skipf("the %s tier does not isolate the filesystem (docs/sandboxes.md)", h.Driver.Name())
			}
			fn(t, h)
		}
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Harness)
		when bool
		// anyAgent: the guarantee holds for an agent that is not root
		// too; with h.NonRootAgent the case runs again as uid 65534.
		anyAgent bool
	}{
		{"ReadShadow", fsCase(escapeReadShadow), true, true},
		{"ReadAgentData", fsCase(escapeReadAgentData), true, false},
		{"DotDot", fsCase(escapeDotDot), true, false},
		{"PlantedSymlink", fsCase(escapePlantedSymlink), true, false},
		{"ToolSymlink", fsCase(escapeToolSymlink), true, false},
		{"SymlinkSwapRace", fsCase(escapeSwapRace), true, false},
		{"MemoryHog", escapeMemoryHog, true, false},
		{"OutputFlood1GiB", escapeFlood, true, false},
		{"TTY", escapeTTY, true, false},
		{"LoopbackConnect", escapeLoopback, true, true},
		{"NoNetwork", escapeNoNetwork, h.Processes, true},
		{"Allowlist", escapeAllowlist, h.Network, false},
		{"DangerousSyscalls", escapeSyscalls, h.Seccomp, true},
		{"ForkBomb", escapeForkBomb, h.Processes, false},
		{"InterpreterCopy", escapeInterpreterCopy, h.Argv, false},
		{"EnvLauncher", escapeEnvLauncher, h.Argv, false},
		{"OptionInjection", escapeOptionInjection, h.Argv, false},
		{"SetuidLeftBehind", escapeSetuid, h.Processes, false},
		{"RootOnlyFileInGrant", escapeRootOnlyGrant, h.Argv && h.IsolatesFilesystem, false},
		{"UserNamespace", escapeUserNamespace, h.Processes, true},
		{"OtherProcesses", escapeOtherProcesses, h.Processes, true},
		{"DiskFilled", escapeDiskFilled, true, false},
	}
	for _, c := range cases {
		if !c.when {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, h)
			if c.anyAgent && h.NonRootAgent && !t.Failed() {
				asNobody(t)
			}
		})
	}
}

// hostSecret writes the secret in a fresh directory outside any workspace.
func hostSecret(t *testing.T) (dir, file string) {
	dir = t.TempDir()
	os.Chmod(dir, 0o755)
	file = filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func noSecret(t *testing.T, o sandbox.Outcome) {
	t.Helper()
	if strings.Contains(string(o.Output), secret) || strings.Contains(string(o.Stderr), secret) {
		t.Fatalf("ESCAPED: the tool read the host secret (%s)", brief(o))
	}
}

func escapeReadShadow(t *testing.T, h Harness) {
	o := run(t, h, h.Manifest(), `{"op":"read","path":"/etc/shadow"}`, "")
	if o.Status == sandbox.StatusOK {
		t.Fatalf("ESCAPED: read /etc/shadow (%d bytes)", o.OutputBytes)
	}
	failedAt(t, o, "read:")
}

// failedAt checks that the tool ran and the attempt itself failed: the
// tool's own error message, not a tool that never started.
func failedAt(t *testing.T, o sandbox.Outcome, prefix string) {
	t.Helper()
	if o.Status != sandbox.StatusError || !strings.HasPrefix(string(o.Stderr), prefix) {
		t.Fatalf("want the tool to fail at %q: %s", prefix, brief(o))
	}
}

func escapeReadAgentData(t *testing.T, h Harness) {
	_, file := hostSecret(t)
	o := run(t, h, h.Manifest(), `{"op":"read","path":"`+file+`"}`, "")
	noSecret(t, o)
}

func escapeDotDot(t *testing.T, h Harness) {
	ws := workspace(t)
	parent := filepath.Dir(ws)
	os.WriteFile(filepath.Join(parent, "secret"), []byte(secret), 0o644)
	for _, p := range []string{"../secret", "../../" + filepath.Base(parent) + "/secret", "./../secret"} {
		noSecret(t, run(t, h, h.Manifest(), `{"op":"read","path":"`+p+`"}`, ws))
		run(t, h, h.Manifest(), `{"op":"write","path":"`+strings.TrimSuffix(p, "secret")+`written","data":"x"}`, ws)
		if _, err := os.Stat(filepath.Join(parent, "written")); err == nil {
			t.Fatalf("ESCAPED: wrote %s next to the workspace", p)
		}
	}
}

func escapePlantedSymlink(t *testing.T, h Harness) {
	dir, file := hostSecret(t)
	ws := workspace(t)
	rel, _ := filepath.Rel(ws, file)
	os.Symlink(file, filepath.Join(ws, "abs"))
	os.Symlink(rel, filepath.Join(ws, "rel"))
	os.Symlink(dir, filepath.Join(ws, "dirlink"))
	for _, p := range []string{"abs", "rel", "dirlink/secret"} {
		noSecret(t, run(t, h, h.Manifest(), `{"op":"read","path":"`+p+`"}`, ws))
	}
	run(t, h, h.Manifest(), `{"op":"write","path":"dirlink/planted","data":"x"}`, ws)
	if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
		t.Fatalf("ESCAPED: wrote through a directory symlink")
	}
}

func escapeToolSymlink(t *testing.T, h Harness) {
	_, file := hostSecret(t)
	ws := workspace(t)
	rel, _ := filepath.Rel(ws, file)
	for _, target := range []string{file, rel} {
		noSecret(t, run(t, h, h.Manifest(), `{"op":"symlink","path":"link","data":"`+target+`"}`, ws))
	}
}

// escapeSwapRace flips a workspace entry between a regular file and a
// symlink to the secret while the tool reads it 10,000 times. The race
// counts only if the tool saw both states (some reads of the file, some
// through the link that failed); a run that saw one is tried again, up to
// five times, since a loaded host can leave the flipper unscheduled. In a
// tier whose tool works on a private copy of its workspace
// (h.PrivateWorkspace) the host's flips never reach it: the tool flips the
// entry itself.
func escapeSwapRace(t *testing.T, h Harness) {
	_, file := hostSecret(t)
	params := `{"op":"race","path":"entry","bytes":10000}`
	if h.PrivateWorkspace {
		params = `{"op":"race","path":"entry","bytes":10000,"data":"` + file + `"}`
	}
	for try := 1; ; try++ {
		ws := workspace(t)
		entry := filepath.Join(ws, "entry")
		os.WriteFile(entry, []byte("safe"), 0o644)
		ctx, cancel := context.WithCancel(context.Background())
		var flips atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil && !h.PrivateWorkspace; i++ {
				tmp := filepath.Join(ws, fmt.Sprintf(".swap%d", i%2))
				os.Remove(tmp)
				if i%2 == 0 {
					os.Symlink(file, tmp)
				} else {
					os.WriteFile(tmp, []byte("safe"), 0o644)
				}
				os.Rename(tmp, entry)
				flips.Add(1)
			}
		}()
		m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.TimeoutMS = 120_000 })
		o := run(t, h, m, params, ws)
		cancel()
		<-done
		noSecret(t, o)
		if strings.Contains(string(o.Output), "LEAK") {
			t.Fatalf("ESCAPED: %s", o.Output)
		}
		var leaks, safe, failed int
		if n, _ := fmt.Sscanf(string(o.Output), "leaks=%d safe=%d failed=%d", &leaks, &safe, &failed); o.Status != sandbox.StatusOK || n != 3 || leaks != 0 {
			t.Fatalf("the race did not run: %s", brief(o))
		}
		if safe+failed != 10000 {
			t.Fatalf("%d reads, want 10000: %s", safe+failed, o.Output)
		}
		if safe > 0 && failed > 0 {
			by := fmt.Sprintf("%d swaps by the host", flips.Load())
			if h.PrivateWorkspace {
				by = "swaps by the tool"
			}
			t.Logf("try %d: %s; %d reads of the file, %d through the link refused, none leaked", try, by, safe, failed)
			return
		}
		if try == 5 {
			t.Fatalf("in 5 tries the tool never saw both the file and the link (last: %s, %d swaps)", o.Output, flips.Load())
		}
	}
}

// escapeMemoryHog allocates 4 GiB in 8 MiB steps under a 128 MiB limit:
// the tool must get going (some steps) and be stopped well before the end.
// Tiers with a memory cgroup stop it there and say so (reason "memory").
func escapeMemoryHog(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.MemoryBytes = 128 << 20; l.TimeoutMS = 60_000 })
	o := run(t, h, m, `{"op":"alloc","bytes":4294967296}`, "")
	steps := strings.Count(string(o.Output), ".")
	if o.Status == sandbox.StatusOK || steps >= 512 {
		t.Fatalf("ESCAPED: allocated 4 GiB under a 128 MiB limit (%s)", brief(o))
	}
	if o.Status != sandbox.StatusError || steps == 0 {
		t.Fatalf("the hog did not run and get stopped: %d steps of 8 MiB (%s)", steps, brief(o))
	}
	if steps > 16 {
		t.Errorf("the tool held %d MiB under a 128 MiB limit", steps*8)
	}
	if h.MemoryCgroup && o.Reason != "memory" {
		t.Errorf("reason %q, want memory (the memory cgroup's kill)", o.Reason)
	}
	t.Logf("stopped after %d MiB: %s %q", steps*8, o.Status, o.Reason)
}

func escapeFlood(t *testing.T, h Harness) {
	start := time.Now()
	o := run(t, h, h.Manifest(), `{"op":"flood","bytes":1073741824}`, "")
	want(t, o, sandbox.StatusOutputLimit)
	if int64(len(o.Output)) != sandbox.DefaultOutputBytes {
		t.Errorf("kept %d bytes, want %d", len(o.Output), sandbox.DefaultOutputBytes)
	}
	elapsed(t, start, 20*time.Second)
}

// escapeLoopback tries to reach a listener on the host's loopback. Only
// loopback is ever a target: a tier that let the tool out would otherwise
// send traffic to a real network.
func escapeLoopback(t *testing.T, h Harness) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	o := run(t, h, h.Manifest(), `{"op":"connect","data":"`+ln.Addr().String()+`"}`, "")
	if o.Status == sandbox.StatusOK {
		t.Fatalf("ESCAPED: the tool connected to the host's loopback %s", ln.Addr())
	}
	failedAt(t, o, "connect:")
}

// escapeTTY: the tool has no controlling terminal to inject input into
// (TIOCSTI), whether the agent has none (a service) or one (started from a
// shell: for tiers whose tools are processes the case runs again in a test
// process holding a pseudo-terminal; a WASI module has no call that could
// reach a terminal at all).
func escapeTTY(t *testing.T, h Harness) {
	if inTerminal() {
		requireTerminal(t)
	}
	o := run(t, h, h.Manifest(), `{"op":"tty"}`, "")
	if o.Status == sandbox.StatusOK {
		t.Fatalf("ESCAPED: the tool opened a controlling terminal (TIOCSTI possible)")
	}
	failedAt(t, o, "no tty:")
	if inTerminal() {
		t.Log(terminalMarker)
		return
	}
	if h.Processes {
		inTerminalRerun(t)
	}
}

func escapeForkBomb(t *testing.T, h Harness) {
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.Pids = 32; l.TimeoutMS = 30_000 })
	start := time.Now()
	o := run(t, h, m, `{"op":"forkbomb"}`, "")
	elapsed(t, start, 25*time.Second)
	want(t, o, sandbox.StatusOK)
	var n int
	fmt.Sscan(string(o.Output), &n)
	if n >= 32 || n == 0 {
		t.Fatalf("started %d processes under a limit of 32 pids: want some, fewer than 32", n)
	}
}

func escapeInterpreterCopy(t *testing.T, h Harness) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		missingOnHost(t, "no /bin/sh on this host")
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "formatter")
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	m := h.Manifest("-c", "cat /etc/shadow")
	m.Command.Path = cp
	o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: workspace(t)})
	isRefused(t, o, err, sandbox.ErrInterpreter)
}

func escapeEnvLauncher(t *testing.T, h Harness) {
	m := h.Manifest("bash", "-c", "{{cmd}}")
	m.Command.Path = "/usr/bin/env"
	o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
		Params: jsontext.Value(`{"cmd":"id"}`), Workspace: workspace(t)})
	isRefused(t, o, err, sandbox.ErrInterpreter)
}

func escapeOptionInjection(t *testing.T, h Harness) {
	m := h.Manifest("{{file}}")
	for _, v := range []string{"--output=/etc/passwd", "-rf", "-"} {
		o, err := h.Driver.Run(context.Background(), sandbox.Invocation{Manifest: m,
			Params: jsontext.Value(`{"op":"argv","file":"` + v + `"}`), Workspace: workspace(t)})
		isRefused(t, o, err, sandbox.ErrDashArg)
	}
}

// escapeSyscalls tries the system calls a seccomp filter must deny; the
// tool reports each one's errno.
func escapeSyscalls(t *testing.T, h Harness) {
	o := run(t, h, h.Manifest(), `{"op":"syscalls"}`, "")
	want(t, o, sandbox.StatusOK)
	for _, line := range strings.Split(string(o.Output), "\n") {
		name, result, _ := strings.Cut(line, "=")
		if result != "EPERM" && !(name == "clone3" && result == "ENOSYS") {
			t.Errorf("ESCAPED: %s returned %s, want EPERM", name, result)
		}
	}
}

// requireRoot stops a case about what a root agent guarantees (tools as an
// unprivileged user, a tmpfs workspace): a failure under CI=true, which
// runs as root; a skip otherwise.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		missingOnHost(t, "the guarantee under test is a root agent's")
	}
}

// escapeSetuid: a tool sets the setuid and setgid bits on a file it wrote
// in its workspace. Handed back, the file has neither bit, and it does not
// belong to root (the agent): the tool ran as an unprivileged user.
func escapeSetuid(t *testing.T, h Harness) {
	requireRoot(t)
	ws := workspace(t)
	o := run(t, h, h.Manifest(), `{"op":"setuid","path":"suid"}`, ws)
	want(t, o, sandbox.StatusOK)
	fi, err := os.Lstat(filepath.Join(ws, "suid"))
	if err != nil {
		t.Fatalf("the tool's file is not in the workspace: %v", err)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Fatalf("ESCAPED: a file with mode %v was left in the workspace (the tool saw %s)", fi.Mode(), o.Output)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid == 0 || st.Gid == 0 {
		t.Fatalf("ESCAPED: the tool's file belongs to root on the host (%+v)", fi.Sys())
	}
}

// escapeRootOnlyGrant: a read_only grant holds a root-only (0600) file; the
// tool, which runs as an unprivileged user, cannot read it, and can read
// the world-readable file beside it.
func escapeRootOnlyGrant(t *testing.T, h Harness) {
	requireRoot(t)
	dir, err := os.MkdirTemp("", "writ-grant-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "public"), []byte("public"), 0o644)
	if err := os.WriteFile(filepath.Join(dir, "shadow"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	m := h.Manifest()
	m.ReadOnly = append(m.ReadOnly, dir)
	o := run(t, h, m, `{"op":"read","path":"`+filepath.Join(dir, "public")+`"}`, "")
	if o.Status != sandbox.StatusOK || string(o.Output) != "public" {
		t.Fatalf("the grant itself does not work: %s", brief(o))
	}
	o = run(t, h, m, `{"op":"read","path":"`+filepath.Join(dir, "shadow")+`"}`, "")
	noSecret(t, o)
	failedAt(t, o, "read:")
}

// escapeUserNamespace: a tool cannot start a process in a new user
// namespace (where it would hold every capability, and with a new network
// namespace reach nf_tables).
func escapeUserNamespace(t *testing.T, h Harness) {
	o := run(t, h, h.Manifest(), `{"op":"userns"}`, "")
	if o.Status == sandbox.StatusOK {
		t.Fatalf("ESCAPED: the tool created a user namespace (%s)", brief(o))
	}
	failedAt(t, o, "userns:")
}

// escapeOtherProcesses: a host process holds a secret on its command line;
// the tool reads every command line its /proc shows, and the secret is not
// among them. Where it has a /proc, it sees its own command line there.
func escapeOtherProcesses(t *testing.T, h Harness) {
	host := exec.Command(HostTool(t), "--token="+secret)
	host.Stdin = strings.NewReader(`{"op":"sleep","ms":60000}`)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	// Start returns once the child is forked; until it has exec'd, its
	// command line is still the test's.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", host.Process.Pid))
		if err == nil && strings.Contains(string(b), secret) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host process does not show its secret on the host: %q %v", b, err)
		}
	}
	o := run(t, h, h.Manifest(), `{"op":"procs"}`, "")
	want(t, o, sandbox.StatusOK)
	noSecret(t, o)
	var n int
	if i := strings.LastIndex(string(o.Output), "cmdlines="); i >= 0 {
		fmt.Sscanf(string(o.Output[i:]), "cmdlines=%d", &n)
	} else if !strings.HasPrefix(string(o.Output), "no /proc") {
		t.Fatalf("unexpected output: %s", brief(o))
	}
	if strings.HasPrefix(string(o.Output), "no /proc") {
		t.Logf("the tool has no /proc: %s", o.Output)
		return
	}
	if n == 0 || n > 8 {
		t.Fatalf("the tool saw %d command lines, want its own few: %s", n, o.Output)
	}
	t.Logf("the tool sees %d processes", n)
}

// escapeDiskFilled: a tool writes 64 MiB, ignoring write errors, into a
// workspace limited to 8 MiB. The run ends with status disk_limit, and what
// the workspace holds afterwards is within the limit.
func escapeDiskFilled(t *testing.T, h Harness) {
	if !h.DiskQuotaAnyAgent {
		requireRoot(t)
	}
	const limit = 8 << 20
	ws := workspace(t)
	m := withLimits(h.Manifest(), func(l *sandbox.Limits) { l.DiskBytes = limit; l.TimeoutMS = 60_000 })
	o := run(t, h, m, `{"op":"fill","path":"big","bytes":67108864}`, ws)
	want(t, o, sandbox.StatusDiskLimit)
	var total int64
	filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if total > limit+(1<<20) {
		t.Fatalf("ESCAPED: the workspace holds %d bytes after the run, limit %d", total, limit)
	}
	t.Logf("%s; %d bytes in the workspace after the run (%s)", o.Reason, total, o.Output)
	if h.DiskQuotaAnyAgent {
		asNobody(t)
	}
}
