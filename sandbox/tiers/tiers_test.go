package tiers_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/tiers"
)

func TestNew(t *testing.T) {
	cfg := tiers.DefaultConfig()
	cfg.Wasm.CacheDir = t.TempDir()
	cfg.Runc.RootFS = t.TempDir()
	cfg.Runc.StateDir = t.TempDir()
	cfg.Gvisor.OCI.RootFS = t.TempDir()
	cfg.Gvisor.OCI.StateDir = t.TempDir()
	for _, name := range tiers.Names {
		d, err := tiers.New(name, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Name() != name {
			t.Errorf("New(%q).Name() = %q", name, d.Name())
		}
	}
	if _, err := tiers.New("docker", cfg); err == nil {
		t.Errorf("unknown tier: got no error")
	}
	cfg.Runc.RootFS = ""
	if _, err := tiers.New("runc", cfg); err == nil {
		t.Errorf("runc without RootFS: got no error")
	}
}

// TestBench runs `writ bench sandbox`'s measurement briefly on every tier
// this host has: each gets a tier time and a raw baseline.
func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	cfg := tiers.DefaultConfig()
	cfg.Runc.RootFS = sandboxtest.BusyboxRootfs(t)
	cfg.Gvisor.OCI.RootFS = cfg.Runc.RootFS
	bc := tiers.BenchConfig{Tiers: cfg, N: 3,
		Echo:     sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", runtime.GOOS, runtime.GOARCH),
		EchoWasm: sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", "wasip1", "wasm")}
	for _, r := range tiers.Bench(context.Background(), bc) {
		if r.Error != "" {
			sandboxtest.RequireAvailable(t, r.Tier, errors.New(r.Error))
			continue
		}
		if r.P50 <= 0 || r.RawP50 <= 0 || r.Ratio <= 0 || r.Baseline == "" {
			t.Errorf("%s: %+v", r.Tier, r)
		}
		t.Logf("%s: p50 %v, raw %v (%s), ratio %.2f", r.Tier, r.P50, r.RawP50, r.Baseline, r.Ratio)
	}
}
