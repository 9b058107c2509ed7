package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/writhq/writ/internal/eventually"
)

func TestOffsetClock(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          time.Duration
		ok            bool
	}{
		{"forward", "45s\n", 45 * time.Second, true},
		{"back", " -1m30s ", -90 * time.Second, true},
		{"none", "0s", 0, true},
		{"a day", "24h", 24 * time.Hour, true},
		{"over a day", "24h1s", 0, false},
		{"under minus a day", "-25h", 0, false},
		{"no unit", "45", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := newOffsetClock(path)
			if (err == nil) != tc.ok {
				t.Fatalf("newOffsetClock(%q): %v, want ok %v", tc.content, err, tc.ok)
			}
			if err != nil {
				return
			}
			if got := time.Duration(c.off.Load()); got != tc.want {
				t.Errorf("offset %s, want %s", got, tc.want)
			}
			if d := time.Until(c.Now()) - tc.want; d > time.Second || d < -time.Second {
				t.Errorf("Now is %s off the host's clock plus %s", d, tc.want)
			}
		})
	}
	if _, err := newOffsetClock(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file: no error")
	}
}

// TestOffsetClockWatch: a new offset written to the file moves the clock;
// a file that no longer reads leaves it where it was.
func TestOffsetClockWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	os.WriteFile(path, []byte("0s"), 0o600)
	c, err := newOffsetClock(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.watch(ctx, slog.New(slog.DiscardHandler))
	waitOffset := func(want time.Duration) {
		t.Helper()
		eventually.NoError(t, "the offset file to be read", func() error {
			if got := time.Duration(c.off.Load()); got != want {
				return fmt.Errorf("offset %s, want %s", got, want)
			}
			return nil
		})
	}
	os.WriteFile(path, []byte("-45s"), 0o600)
	waitOffset(-45 * time.Second)
	os.WriteFile(path, []byte("garbage"), 0o600)
	time.Sleep(5 * clockOffsetPoll)
	waitOffset(-45 * time.Second)
	os.WriteFile(path, []byte("2m"), 0o600)
	waitOffset(2 * time.Minute)
}
