package tiers_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/sandbox"
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
	testtier.Slow(t, "a benchmark")
	cfg := tiers.DefaultConfig()
	cfg.Runc.RootFS = sandboxtest.BusyboxRootfs(t)
	cfg.Gvisor.OCI.RootFS = cfg.Runc.RootFS
	bc := tiers.BenchConfig{Tiers: cfg, N: 3, WasmVariants: true,
		Echo:     sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", runtime.GOOS, runtime.GOARCH),
		EchoWasm: sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", "wasip1", "wasm")}
	var wasmTools []string
	for _, r := range tiers.Bench(context.Background(), bc) {
		if r.Tier == sandbox.TierWasm {
			wasmTools = append(wasmTools, r.Tool)
		}
		if r.Error != "" {
			sandboxtest.RequireAvailable(t, r.Tier, errors.New(r.Error))
			continue
		}
		if r.P50 <= 0 || r.RawP50 <= 0 || r.Ratio <= 0 || r.Baseline == "" || r.Tool == "" {
			t.Errorf("%s: %+v", r.Tier, r)
		}
		// The wasm tier runs in this process: its runs use its CPU.
		if r.Tier == sandbox.TierWasm && (r.CPU <= 0 || r.RawCPU <= 0) {
			t.Errorf("%s %s: no CPU time measured: %+v", r.Tier, r.Tool, r)
		}
		t.Logf("%s %s: p50 %v, raw %v (%s), ratio %.2f, CPU %v, raw CPU %v", r.Tier, r.Tool, r.P50, r.RawP50, r.Baseline, r.Ratio, r.CPU, r.RawCPU)
	}
	if want := []string{tiers.ToolEcho, tiers.ToolEchoNoImage, tiers.ToolFloor}; !slices.Equal(wasmTools, want) {
		t.Errorf("wasm rows %q, want %q", wasmTools, want)
	}
}
