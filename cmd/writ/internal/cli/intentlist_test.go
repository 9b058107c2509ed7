package cli

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"24h", now.Add(-24 * time.Hour), true},
		{"90m", now.Add(-90 * time.Minute), true},
		{"2026-11-25T08:00:00Z", time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC), true},
		{"2026-11-25T08:00:00.5+01:00", time.Date(2026, 11, 25, 7, 0, 0, 5e8, time.UTC), true},
		{"0s", time.Time{}, false},
		{"-1h", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-11-25", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := parseSince(c.in, now)
		if (err == nil) != c.ok || (c.ok && !got.Equal(c.want)) {
			t.Errorf("parseSince(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{"": "-", "echo": "echo", "a\tb\nc\x1b[2J": "a?b?c?[2J"} {
		if got := cell(in); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
}
