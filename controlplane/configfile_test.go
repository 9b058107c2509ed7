package controlplane_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/fsm"
)

// TestOutputRetentionSettings: output_retention and output_max_bytes reach
// the FSM's configuration, and values it refuses fail validation.
func TestOutputRetentionSettings(t *testing.T) {
	for _, c := range []struct {
		file      string
		retention time.Duration
		max       int64
		err       string // in Apply or FSM.Validate
	}{
		{`{}`, 24 * time.Hour, fsm.DefaultOutputMaxBytes, ""},
		{`{"output_retention":"2h","output_max_bytes":1048576}`, 2 * time.Hour, 1 << 20, ""},
		{`{"output_retention":"0s","output_max_bytes":0}`, 0, 0, ""},
		{`{"output_retention":"soon"}`, 0, 0, "output_retention"},
		{`{"output_retention":"48h"}`, 0, 0, "output retention"},
		{`{"output_max_bytes":-1}`, 0, 0, "output max bytes"},
	} {
		path := filepath.Join(t.TempDir(), "server.json")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := controlplane.LoadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		cfg := controlplane.DefaultConfig()
		err = f.Apply(&cfg)
		if err == nil {
			err = cfg.FSM.Validate()
		}
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want an error about %s", c.file, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.file, err)
		case cfg.FSM.OutputRetention != c.retention || cfg.FSM.OutputMaxBytes != c.max:
			t.Errorf("%s: got %s and %d bytes, want %s and %d", c.file, cfg.FSM.OutputRetention, cfg.FSM.OutputMaxBytes, c.retention, c.max)
		}
	}
}
