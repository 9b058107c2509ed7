package controlplane_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
)

// TestNodeWaitSetting: node_wait in the configuration file sets how long an
// intent waits for a node; a value that is not a duration, or out of 0–1h,
// is refused.
func TestNodeWaitSetting(t *testing.T) {
	t.Parallel()
	if got := controlplane.DefaultConfig().FSM.NodeWait; got != 30*time.Second {
		t.Fatalf("default node_wait %s, want 30s", got)
	}
	for _, c := range []struct {
		value string
		want  time.Duration
		err   string // in Apply's or Validate's error
	}{
		{"45s", 45 * time.Second, ""},
		{"0s", 0, ""},
		{"1h", time.Hour, ""},
		{"soon", 0, "node_wait"},
		{"-1s", 0, "node wait"},
		{"61m", 0, "node wait"},
	} {
		t.Run(c.value, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "server.json")
			if err := os.WriteFile(path, []byte(`{"node_wait": "`+c.value+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := controlplane.LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := controlplane.DefaultConfig()
			err = f.Apply(&cfg)
			if err == nil {
				err = cfg.FSM.Validate()
			}
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("node_wait %q: %v, want an error about %s", c.value, err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("node_wait %q: %v", c.value, err)
			case c.err == "" && cfg.FSM.NodeWait != c.want:
				t.Fatalf("node_wait %q: %s, want %s", c.value, cfg.FSM.NodeWait, c.want)
			}
		})
	}
}
