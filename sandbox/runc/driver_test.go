package runc_test

import (
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

func config(t testing.TB) runc.Config {
	cfg := runc.DefaultConfig()
	cfg.RootFS = sandboxtest.BusyboxRootfs(t)
	cfg.StateDir = t.TempDir()
	cfg.Egress = sandboxtest.EgressConfig(t)
	return cfg
}

func newDriver(t testing.TB) *runc.Driver {
	d, err := runc.New(config(t))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "runc", d.Available())
	return d
}

func TestSandbox(t *testing.T) {
	d := newDriver(t)
	t.Logf("OCI runtime: %s", d.Version())
	tool := sandboxtest.HostTool(t)
	missing := config(t)
	missing.Runtime = "/nonexistent/runc"
	unavailable, err := runc.New(missing)
	if err != nil {
		t.Fatal(err)
	}
	h := sandboxtest.Harness{
		Driver: d,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierRunc,
				Command: &sandbox.Command{Path: tool, Args: args}}
		},
		Unavailable:        unavailable,
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
