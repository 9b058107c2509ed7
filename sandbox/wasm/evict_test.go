package wasm

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestEvictedWhileTaken: with room for one compiled module, a run that took
// module A is held before instantiating it while another run compiles B,
// which evicts A. The held run must still run A: an evicted module is
// closed only once no run holds it.
func TestEvictedWhileTaken(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CacheDir, cfg.MaxModules = testCache(t), 1
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	a := sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", "wasip1", "wasm")
	b := sandboxtest.WasmTool(t)
	run := func(mod string) (sandbox.Outcome, error) {
		return d.Run(context.Background(), sandbox.Invocation{Params: jsontext.Value(`{"op":"echo"}`), Workspace: t.TempDir(),
			Manifest: sandbox.Manifest{Name: "t", Tier: sandbox.TierWasm, Module: mod}})
	}
	taken, evicted := make(chan struct{}), make(chan struct{})
	defer func() { beforeInstantiate = func(string) {} }()
	beforeInstantiate = func(mod string) {
		if mod == a {
			close(taken)
			<-evicted
		}
	}
	type result struct {
		out sandbox.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() { out, err := run(a); done <- result{out, err} }()
	<-taken
	if out, err := run(b); err != nil || out.Status != sandbox.StatusOK {
		t.Fatalf("run of B: %v %s %q", err, out.Status, out.Reason)
	}
	close(evicted)
	r := <-done
	if r.err != nil || r.out.Status != sandbox.StatusOK || string(r.out.Output) != `{"op":"echo"}` {
		t.Fatalf("run of A, evicted while taken: %v %s %q", r.err, r.out.Status, r.out.Reason)
	}
}
