package bwrap_test

import (
	"os"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

func newDriver(t testing.TB) *bwrap.Driver {
	cfg := bwrap.DefaultConfig()
	cfg.Egress = sandboxtest.EgressConfig(t)
	d, err := bwrap.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "bwrap", d.Available())
	return d
}

func TestSandbox(t *testing.T) {
	d := newDriver(t)
	t.Logf("bwrap version: %s", d.Version())
	if !d.MemoryCgroup() && os.Getenv("CI") == "true" {
		t.Fatal("no memory cgroup under CI=true: memory_bytes would be bounded by RLIMIT_AS alone")
	}
	tool := sandboxtest.HostTool(t)
	missing := bwrap.DefaultConfig()
	missing.Binary = "/nonexistent/bwrap"
	unavailable, err := bwrap.New(missing)
	if err != nil {
		t.Fatal(err)
	}
	h := sandboxtest.Harness{
		Driver: d,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierBwrap,
				Command: &sandbox.Command{Path: tool, Args: args}}
		},
		Unavailable:        unavailable,
		Argv:               true,
		Processes:          true,
		IsolatesFilesystem: true,
		CPULimit:           true,
		Network:            true,
		MemoryCgroup:       d.MemoryCgroup(),
		Seccomp:            true,
		NonRootAgent:       true,
		DiskQuotaAnyAgent:  true,
		// The workspace is a tmpfs of the run: mounted in its private
		// mount namespace (root agent) or in the sandbox's (any other).
		PrivateWorkspace: true,
		ExtraEnv:         []string{"PWD"},
	}
	t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, h) })
	t.Run("Escape", func(t *testing.T) { sandboxtest.Escape(t, h) })
}
