package runc_test

import (
	"os"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestSandboxCrun runs the runc tier's conformance and escape suites with
// crun as the OCI runtime (the agent's runc_runtime), on the same bundles:
// on a hybrid cgroup host too, where crun 1.8 runs without the unified
// mount (docs/sandboxes.md). Under CI=true a crun that runs no container
// fails the test.
func TestSandboxCrun(t *testing.T) {
	cfg := config(t)
	cfg.Runtime = "crun"
	d, err := runc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "runc (crun)", d.Available())
	if d.Name() != sandbox.TierRunc {
		t.Fatalf("Name() = %q", d.Name())
	}
	t.Logf("OCI runtime: %s", d.Version())
	// crun 1.8 on a hybrid host whose unified hierarchy holds a controller
	// runs without that mount, and says so; elsewhere it runs as it is.
	if strings.Contains(d.Version(), "/sys/fs/cgroup/unified hidden from it") && !hybridCgroups() {
		t.Errorf("crun runs without the unified mount on a host that is not hybrid: %s", d.Version())
	}
	tool := sandboxtest.HostTool(t)
	h := sandboxtest.Harness{
		Driver: d,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierRunc,
				Command: &sandbox.Command{Path: tool, Args: args}}
		},
		Argv:               true,
		Processes:          true,
		IsolatesFilesystem: true,
		CPULimit:           true,
		Network:            true,
		Seccomp:            true,
		ExtraEnv:           []string{"HOME"},
	}
	t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, h) })
	t.Run("Escape", func(t *testing.T) { sandboxtest.Escape(t, h) })
}

// TestCrunCgroupLimits reads the limits crun gives a container's cgroup:
// those runc gives (TestCgroupLimits), on a hybrid host too.
func TestCrunCgroupLimits(t *testing.T) { cgroupLimits(t, "crun") }

// TestCrunStaleContainer: New deletes a crashed agent's crun container
// and leaves a live one's, as TestStaleContainer shows for runc.
func TestCrunStaleContainer(t *testing.T) { staleContainer(t, "crun") }

// hybridCgroups reports a cgroup v1 hierarchy with a v2 mount beside it
// (/sys/fs/cgroup/unified). It reads the calling thread's mounts: the
// process's main thread may be one that started crun without that mount,
// and a locked thread that ends as the main thread stays, wedged, in that
// mount namespace (what /proc/self shows).
func hybridCgroups() bool {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return false
	}
	v1, v2 := false, false
	for _, line := range strings.Split(string(b), "\n") {
		_, fs, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(fs, "cgroup2 "):
			v2 = true
		case strings.HasPrefix(fs, "cgroup "):
			v1 = true
		}
	}
	return v1 && v2
}
