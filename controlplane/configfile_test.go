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
	t.Parallel()
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

// TestWebhookSettings: a webhook's secret is read from a file only its owner
// may read, and its settings reach the configuration.
func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "hook.secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open.secret")
	if err := os.WriteFile(open, []byte("0123456789abcdef-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apply := func(file string) (controlplane.Config, error) {
		path := filepath.Join(t.TempDir(), "server.json")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := controlplane.DefaultConfig()
		f, err := controlplane.LoadFile(path)
		if err == nil {
			err = f.Apply(&cfg)
		}
		return cfg, err
	}
	cfg, err := apply(`{"webhooks":[{"url":"https://hooks.example/a","events":["approval.requested"],"secret_file":"` + secret + `","max_attempts":3,"retry_delay":"2s"}]}`)
	if err != nil || len(cfg.Webhooks) != 1 {
		t.Fatalf("%+v %v", cfg.Webhooks, err)
	}
	h := cfg.Webhooks[0]
	if h.URL != "https://hooks.example/a" || string(h.Secret) != "0123456789abcdef-secret" || h.MaxAttempts != 3 || h.RetryDelay != 2*time.Second || len(h.Events) != 1 {
		t.Fatalf("webhook: %+v", h)
	}
	for file, want := range map[string]string{
		`{"webhooks":[{"url":"https://h.example","secret_file":"` + open + `"}]}`:                        "too open",
		`{"webhooks":[{"url":"https://h.example","secret_file":"` + dir + `/none"}]}`:                    "no such file",
		`{"webhooks":[{"url":"https://h.example","secret_file":"` + secret + `","retry_delay":"soon"}]}`: "retry_delay",
		`{"webhooks":[{"url":"https://h.example","secret":"inline"}]}`:                                   "unknown",
	} {
		if _, err := apply(file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error about %s", file, err, want)
		}
	}
}
