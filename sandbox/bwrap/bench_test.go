package bwrap_test

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/internal/benchstat"
)

// BenchmarkTrue runs /usr/bin/true through the bwrap tier next to a raw
// bwrap of it with the same namespaces and mounts. Target: ratio ≤ 1.3.
func BenchmarkTrue(b *testing.B) {
	d := newDriver(b)
	cfg := bwrap.DefaultConfig()
	ro := []string{"/usr", "/lib", "/lib64"}
	m := sandbox.Manifest{Name: "true", Tier: sandbox.TierBwrap, ReadOnly: ro,
		Command: &sandbox.Command{Path: "/usr/bin/true"}}
	ws := b.TempDir()
	raw := append(bwrap.Namespaces(cfg.UID, cfg.GID), "--clearenv", "--proc", "/proc", "--dev", "/dev",
		"--tmpfs", "/tmp")
	for _, p := range ro {
		raw = append(raw, "--ro-bind", p, p)
	}
	raw = append(raw, "--bind", ws, "/workspace", "--chdir", "/workspace", "--remount-ro", "/", "/usr/bin/true")
	benchstat.Compare(b,
		func() error { return exec.Command("bwrap", raw...).Run() },
		func() error {
			out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: ws})
			if err == nil && out.Status != sandbox.StatusOK {
				err = fmt.Errorf("status %s: %s", out.Status, out.Stderr)
			}
			return err
		})
}
