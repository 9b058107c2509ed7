package process_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/process"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

func newDriver(t testing.TB) *process.Driver {
	cfg := process.DefaultConfig()
	cfg.Egress = sandboxtest.EgressConfig(t)
	d, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	return d
}

func TestSandbox(t *testing.T) {
	d := newDriver(t)
	t.Logf("filesystem confinement: %s", d.Confinement())
	if !d.MemoryCgroup() && os.Getenv("CI") == "true" {
		t.Fatal("no memory cgroup under CI=true: memory_bytes would be bounded by RLIMIT_AS alone")
	}
	tool := sandboxtest.HostTool(t)
	// A tier that must have its cgroup and cannot make one is unavailable:
	// "cgroup.procs" is a file, no parent group can be made below it.
	broken := process.DefaultConfig()
	broken.CgroupParent, broken.RequireCgroup = "writ/cgroup.procs", true
	unavailable, err := process.New(broken)
	if err != nil {
		t.Fatal(err)
	}
	h := sandboxtest.Harness{
		Driver:      d,
		Unavailable: unavailable,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierProcess,
				Command: &sandbox.Command{Path: tool, Args: args}}
		},
		Argv:               true,
		Processes:          true,
		CPULimit:           true,
		IsolatesFilesystem: true,
		Network:            true,
		MemoryCgroup:       d.MemoryCgroup(),
		Seccomp:            true,
		SeccompTraceMe:     true,
		// A root agent's tool works in a tmpfs mounted in its own mount
		// namespace only.
		PrivateWorkspace: os.Geteuid() == 0,
	}
	t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, h) })
	t.Run("Escape", func(t *testing.T) { sandboxtest.Escape(t, h) })
}

// TestGroupKillWithoutCgroup: with no cgroup to catch them, a grandchild
// left in the tool's process group still dies with the tool: the group is
// killed as a whole. (One that calls setsid leaves the group; only a cgroup
// catches it, see docs/sandboxes.md.)
func TestGroupKillWithoutCgroup(t *testing.T) {
	cfg := process.DefaultConfig()
	cfg.CgroupParent = ""
	cfg.Egress = sandboxtest.EgressConfig(t)
	d, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "process", d.Available())
	if d.CgroupVersion() != 0 {
		t.Fatalf("cgroup v%d with CgroupParent empty", d.CgroupVersion())
	}
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierProcess, Command: &sandbox.Command{Path: sandboxtest.HostTool(t)}}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws,
		Params: jsontext.Value(`{"op":"spawngroup","ms":700,"path":"alive"}`)})
	if err != nil || out.Status != sandbox.StatusOK {
		t.Fatalf("%v %s %q", err, out.Status, out.Stderr)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(ws, "alive")); err == nil {
		t.Fatal("a grandchild in the tool's process group outlived it")
	}
}
