package process_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/benchstat"
)

// BenchmarkTrue runs /bin/true through the process tier next to a raw
// fork/exec of it. Target: over-us ≤ 2000.
func BenchmarkTrue(b *testing.B) {
	d := newDriver(b)
	m := sandbox.Manifest{Name: "true", Tier: sandbox.TierProcess, Command: &sandbox.Command{Path: "/bin/true"}}
	ws := b.TempDir()
	benchstat.Compare(b,
		func() error { return exec.Command("/bin/true").Run() },
		func() error {
			out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws})
			if err == nil && out.Status != sandbox.StatusOK {
				err = fmt.Errorf("status %s: %s", out.Status, out.Stderr)
			}
			return err
		})
}
