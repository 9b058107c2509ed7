package nodeagent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/tiers"
)

func TestProbeFindsWhatWorksAndSaysWhyNot(t *testing.T) {
	cfg := tiers.DefaultConfig()
	cfg.Wasm.CacheDir = filepath.Join(t.TempDir(), "wasm")
	cfg.Runc.RootFS = filepath.Join(t.TempDir(), "no-such-rootfs")
	cfg.Runc.StateDir = filepath.Join(t.TempDir(), "runc")
	cfg.Process.UnshareNetwork = false
	got := ProbeTiers(cfg)
	defer got.Close()
	if !got.Has("wasm") || !slices.Contains(got.Available, "wasm") {
		t.Fatalf("wasm (in-process, no host dependency) not available: %v", got.Unavailable["wasm"])
	}
	if err := got.Unavailable["runc"]; !errors.Is(err, sandbox.ErrUnavailable) || got.Has("runc") {
		t.Fatalf("runc without a root filesystem: got %v, want unavailable with the reason", err)
	}
	if err := got.Unavailable["gvisor"]; !errors.Is(err, sandbox.ErrUnavailable) || got.Has("gvisor") {
		t.Fatalf("gvisor without a root filesystem: got %v, want unavailable with the reason", err)
	}
	for _, name := range tiers.Names {
		_, bad := got.Unavailable[name]
		if bad == got.Has(name) {
			t.Errorf("tier %s is both or neither available and unavailable", name)
		}
	}
	// The mcp tier runs its stdio servers in the tiers that work.
	if got.Has("mcp") != (got.Has("bwrap") || got.Has("process") || got.Has("runc") || got.Has("gvisor")) {
		t.Errorf("mcp available %v, want it exactly when a tier for stdio servers is (%v; %v)", got.Has("mcp"), got.Available, got.Unavailable["mcp"])
	}
	if !slices.IsSortedFunc(got.Available, func(a, b string) int { return rank(a) - rank(b) }) {
		t.Errorf("Available %v is not in tiers.Names order", got.Available)
	}
	// Where the machine is set up for the tests (CI), the host tiers must
	// really work: a tier that silently went missing would shrink what the
	// node announces.
	if os.Getenv("CI") == "true" {
		for _, name := range []string{"bwrap", "process", "mcp"} {
			if !got.Has(name) {
				t.Errorf("CI=true: the %s tier is unavailable: %v", name, got.Unavailable[name])
			}
		}
	}
}

func TestProbeRefusesADriverUnderAnotherName(t *testing.T) {
	d := sharedWasm(t)
	got := Probe(map[string]sandbox.Driver{"process": d, "wasm": d})
	if got.Has("process") || !errors.Is(got.Unavailable["process"], sandbox.ErrUnavailable) || !got.Has("wasm") {
		t.Fatalf("got available %v, unavailable %v; want the wasm driver refused as process", got.Available, got.Unavailable)
	}
}
