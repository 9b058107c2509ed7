package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
)

// Harness adapts one tier to the suite.
type Harness struct {
	// Driver is the tier under test; it must be available.
	Driver sandbox.Driver
	// Manifest returns a valid manifest for this tier that runs the test
	// tool with argv template args (ignored by tiers without argv).
	Manifest func(args ...string) sandbox.Manifest
	// Unavailable is a driver of the same tier configured so that it cannot
	// run (a missing binary, say). Nil skips the refusal case.
	Unavailable sandbox.Driver

	Argv               bool // the tier passes argv templates (command tiers)
	Processes          bool // tools are OS processes: descriptors, grandchildren, interpreters
	IsolatesFilesystem bool // the tool cannot write outside its workspace
	CPULimit           bool // limits.cpu_seconds is enforced as CPU time
	// Network says the tier honours network allowlists; its driver must
	// use EgressConfig(t) as its proxy configuration.
	Network bool
	// Seccomp says the tier filters system calls: unshare, mount, ptrace,
	// keyctl, bpf and perf_event_open fail with EPERM.
	Seccomp bool
	// SeccompTraceMe says the filter lets ptrace(PTRACE_TRACEME) through
	// (the process tier, whose agent holds every tool at its exec that way:
	// the tracer is the agent, which lets the thread go). Every other
	// ptrace request still fails.
	SeccompTraceMe bool
	// MemoryCgroup says the tier enforces limits.memory_bytes with a memory
	// cgroup and reports its kill with reason "memory".
	MemoryCgroup bool
	// NonRootAgent says the tier runs for an agent that is not root: the
	// escape cases whose guarantee holds for such an agent too run again
	// as uid 65534 when the tests run as root.
	NonRootAgent bool
	// DiskQuotaAnyAgent says the tier enforces limits.disk_bytes for an
	// agent that is not root too (wasm counts the guest's writes; bwrap
	// mounts the tmpfs itself; the other command tiers need a root agent's
	// tmpfs). DiskFilled then runs as root and, when the tests run as root,
	// once more as uid 65534; with NonRootAgent, Workspace does too.
	DiskQuotaAnyAgent bool
	// PrivateWorkspace says the tool works on a private copy of its
	// workspace, handed back when it ends (bwrap; the process tier for a
	// root agent): what the host changes in the workspace during the run does
	// not reach the tool, so SymlinkSwapRace has the tool flip the entry.
	PrivateWorkspace bool
	// ExtraEnv names variables the tier itself sets in every tool's
	// environment (bwrap sets PWD). Nothing else may appear.
	ExtraEnv []string
}

// Run runs the conformance suite against h. Under -short the suite is
// skipped (make test runs it).
func Run(t *testing.T, h Harness) {
	if testing.Short() {
		t.Skip("not in -short: the conformance suite")
	}
	if err := h.Driver.Available(); err != nil {
		t.Fatalf("driver %s not available: %v", h.Driver.Name(), err)
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Harness)
		when bool
	}{
		{"ExitCodes", testExitCodes, true},
		{"StdinParams", testStdinParams, true},
		{"OutputHash", testOutputHash, true},
		{"ExecDigest", testExecDigest, true},
		{"OutputCap", testOutputCap, true},
		{"OutputFlood", testOutputFlood, true},
		{"Timeout", testTimeout, true},
		{"Spin", testSpin, true},
		{"Cancel", testCancel, true},
		{"Workspace", testWorkspace, true},
		{"EnvScrub", testEnvScrub, true},
		{"WrongTier", testWrongTier, true},
		{"BadParams", testBadParams, true},
		{"Unavailable", testUnavailable, h.Unavailable != nil},
		{"Concurrent", testConcurrent, true},
		{"SmallMemory", testSmallMemory, true},
		{"ArgvTemplate", testArgvTemplate, h.Argv},
		{"Interpreters", testInterpreters, h.Argv},
		{"Descriptors", testDescriptors, h.Processes},
		{"Grandchild", testGrandchild, h.Processes},
		{"Rlimits", testRlimits, h.Processes && runtime.GOOS == "linux"},
		{"ReadOnlyGrant", testReadOnlyGrant, h.IsolatesFilesystem},
		{"TraceMe", testTraceMe, h.Processes},
		{"WriteOutside", testWriteOutside, h.IsolatesFilesystem},
		{"CPULimit", testCPULimit, h.CPULimit},
	}
	for _, c := range cases {
		if !c.when {
			continue
		}
		t.Run(c.name, func(t *testing.T) { c.fn(t, h) })
	}
}

// run invokes the tool with params in a fresh workspace unless ws is given.
func run(t *testing.T, h Harness, m sandbox.Manifest, params string, ws string) sandbox.Outcome {
	t.Helper()
	return runCtx(context.Background(), t, h, m, params, ws, nil)
}

func runCtx(ctx context.Context, t *testing.T, h Harness, m sandbox.Manifest, params, ws string, env map[string]string) sandbox.Outcome {
	t.Helper()
	if ws == "" {
		ws = workspace(t)
	}
	out, err := h.Driver.Run(ctx, sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: ws, Env: env})
	if err != nil && out.Status != sandbox.StatusRefused {
		t.Fatalf("Run: %v (%s)", err, brief(out))
	}
	if out.Tier != h.Driver.Name() {
		t.Errorf("tier: got %q, want %q", out.Tier, h.Driver.Name())
	}
	return out
}

// workspace makes a fresh workspace any user can write, as a tool may run
// under another uid.
func workspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ws, 0o777)
	return ws
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// brief prints an Outcome without pages of output.
func brief(o sandbox.Outcome) string {
	cut := func(b []byte, n int) []byte {
		if len(b) > n {
			return b[:n]
		}
		return b
	}
	return fmt.Sprintf("status=%s exit=%d reason=%q output=%q (%d bytes) stderr=%q usage=%+v tier=%s",
		o.Status, o.ExitCode, o.Reason, cut(o.Output, 200), o.OutputBytes, cut(o.Stderr, 600), o.Usage, o.Tier)
}

func want(t *testing.T, o sandbox.Outcome, s sandbox.Status) {
	t.Helper()
	if o.Status != s {
		t.Fatalf("status: got %q, want %q (%s)", o.Status, s, brief(o))
	}
}

func withLimits(m sandbox.Manifest, f func(*sandbox.Limits)) sandbox.Manifest {
	f(&m.Limits)
	return m
}

func elapsed(t *testing.T, start time.Time, max time.Duration) {
	t.Helper()
	if d := time.Since(start); d > max {
		t.Errorf("took %v, want under %v", d, max)
	}
}

func isRefused(t *testing.T, o sandbox.Outcome, err error, cause error) {
	t.Helper()
	if o.Status != sandbox.StatusRefused || !errors.Is(err, sandbox.ErrRefused) {
		t.Fatalf("got status %q err %v, want a refusal", o.Status, err)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Fatalf("refusal %v does not wrap %v", err, cause)
	}
	if o.Reason == "" || !strings.Contains(err.Error(), o.Reason) {
		t.Errorf("refusal reason %q not in error %q", o.Reason, err)
	}
}
