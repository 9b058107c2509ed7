package runc_test

import (
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestSandboxCrun runs the runc tier's conformance and escape suites with
// crun as the OCI runtime (the agent's runc_runtime), on the same bundles.
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
