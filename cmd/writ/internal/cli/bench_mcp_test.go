package cli

import (
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       time.Duration
		ok         bool
	}{
		{"plain", "42 (writ) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 8 0", 100 * time.Millisecond, true},
		{"name with spaces and parens", "42 (a b) (c)) S 1 42 42 0 -1 4194560 100 0 0 0 12 0 0 0 20 0 8 0", 120 * time.Millisecond, true},
		{"too short", "42 (writ) S 1 42", 0, false},
		{"no name", "42 writ S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0", 0, false},
		{"not a number", "42 (writ) S 1 42 42 0 -1 4194560 100 0 0 0 x 3 0 0", 0, false},
		{"negative", "42 (writ) S 1 42 42 0 -1 4194560 100 0 0 0 -7 3 0 0", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := parseProcStat([]byte(c.stat))
			if got != c.want || ok != c.ok {
				t.Fatalf("got %v %v, want %v %v", got, ok, c.want, c.ok)
			}
		})
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if _, ok := parseProcStat(b); !ok {
			t.Errorf("this process's /proc/self/stat does not parse: %q", b)
		}
	}
}
