package wasm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/sandbox"
)

// TestGate: RunGated calls the gate once, before any of the module runs;
// a gate that fails leaves a refusal and no output, with or without a
// start section (whose function wasm runs while instantiating).
func TestGate(t *testing.T) {
	d := newDriver(t, t.TempDir())
	for _, c := range []struct {
		name  string
		start bool
		want  string // output when the gate lets it run: the start function, then _start
	}{{"no start section", false, "ok"}, {"start section", true, "okok"}} {
		t.Run(c.name, func(t *testing.T) {
			mod := filepath.Join(t.TempDir(), "tiny.wasm")
			if err := os.WriteFile(mod, tinyModuleStart(c.start), 0o644); err != nil {
				t.Fatal(err)
			}
			inv := sandbox.Invocation{Workspace: t.TempDir(), Manifest: sandbox.Manifest{Name: "tiny", Tier: sandbox.TierWasm, Module: mod}}
			calls := 0
			out, err := d.RunGated(context.Background(), inv, func() error { calls++; return nil })
			if err != nil || out.Status != sandbox.StatusOK || string(out.Output) != c.want || calls != 1 {
				t.Fatalf("open gate: %v %s %q, gate called %d times", err, out.Status, out.Output, calls)
			}
			no := errors.New("the journal says no")
			out, err = d.RunGated(context.Background(), inv, func() error { calls++; return no })
			if !errors.Is(err, no) || !errors.Is(err, sandbox.ErrRefused) || out.Status != sandbox.StatusRefused || len(out.Output) != 0 || calls != 2 {
				t.Fatalf("closed gate: %v %s %q, gate called %d times: want a refusal and nothing run", err, out.Status, out.Output, calls)
			}
		})
	}
}
