package process_test

import (
	"os"
	"testing"

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
	h := sandboxtest.Harness{
		Driver: d,
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
	}
	t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, h) })
	t.Run("Escape", func(t *testing.T) { sandboxtest.Escape(t, h) })
}
