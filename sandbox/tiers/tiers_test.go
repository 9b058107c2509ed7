package tiers_test

import (
	"testing"

	"github.com/writhq/writ/sandbox/tiers"
)

func TestNew(t *testing.T) {
	cfg := tiers.DefaultConfig()
	cfg.Wasm.CacheDir = t.TempDir()
	cfg.Runc.RootFS = t.TempDir()
	cfg.Runc.StateDir = t.TempDir()
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
