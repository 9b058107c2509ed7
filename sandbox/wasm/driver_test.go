package wasm_test

import (
	"context"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/wasm"
)

func newDriver(t testing.TB, dir string) *wasm.Driver {
	cfg := wasm.DefaultConfig()
	cfg.CacheDir = dir
	d, err := wasm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

func TestSandbox(t *testing.T) {
	d := newDriver(t, t.TempDir())
	tool := sandboxtest.WasmTool(t)
	// A cache path under a regular file cannot be created: unavailable.
	blocker := t.TempDir() + "/file"
	if err := writeFile(blocker); err != nil {
		t.Fatal(err)
	}
	h := sandboxtest.Harness{
		Driver: d,
		Manifest: func(args ...string) sandbox.Manifest {
			return sandbox.Manifest{Name: "testtool", Tier: sandbox.TierWasm, Module: tool}
		},
		Unavailable:        newDriver(t, blocker+"/cache"),
		IsolatesFilesystem: true,
		CPULimit:           true,
		DiskQuotaAnyAgent:  true,
	}
	t.Run("Conformance", func(t *testing.T) { sandboxtest.Run(t, h) })
	t.Run("Escape", func(t *testing.T) { sandboxtest.Escape(t, h) })
}
