package gvisor_test

import (
	"strings"
	"testing"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

func config(t testing.TB) gvisor.Config {
	cfg := gvisor.DefaultConfig()
	cfg.OCI.RootFS = sandboxtest.BusyboxRootfs(t)
	cfg.OCI.StateDir = t.TempDir()
	cfg.OCI.Egress = sandboxtest.EgressConfig(t)
	return cfg
}

// TestSandbox runs the conformance and escape suites in gVisor, on the
// platform the probe chose.
func TestSandbox(t *testing.T) {
	testtier.Slow(t, "gVisor's conformance suite, a runsc sandbox per case")
	d, err := gvisor.New(config(t))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, sandbox.TierGvisor, d.Available())
	if d.Name() != sandbox.TierGvisor {
		t.Fatalf("Name() = %q", d.Name())
	}
	if !strings.Contains(d.Version(), "platform ") {
		t.Errorf("Version() = %q: no platform", d.Version())
	}
	t.Logf("runsc: %s", d.Version())
	tool := sandboxtest.HostTool(t)
	missing := config(t)
	missing.OCI.Runtime = "/nonexistent/runsc"
	unavailable, err := gvisor.New(missing)
	if err != nil {
		t.Fatal(err)
	}
	h := sandboxtest.Harness{
		Driver: d,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierGvisor,
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

// TestPlatform: a configured platform is the one used; one that is not a
// runsc platform is refused by Validate.
func TestPlatform(t *testing.T) {
	cfg := config(t)
	cfg.Platform = gvisor.PlatformPtrace
	d, err := gvisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, sandbox.TierGvisor, d.Available())
	if !strings.HasSuffix(d.Version(), "(platform ptrace)") {
		t.Errorf("Version() = %q, want platform ptrace", d.Version())
	}
	args := strings.Join(d.RuntimeArgs(), " ")
	if !strings.Contains(args, "--platform=ptrace --network=none --oci-seccomp") {
		t.Errorf("RuntimeArgs() = %q", args)
	}
	cfg.Platform = "docker"
	if _, err := gvisor.New(cfg); err == nil {
		t.Error("platform docker: no error")
	}
}
