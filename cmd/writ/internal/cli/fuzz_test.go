package cli

import (
	"testing"
)

// FuzzParseProcStat: any text parses or not without panicking, and a
// figure it reads is a whole number of clock ticks, never negative.
func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("42 (writ) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 8 0"))
	f.Add([]byte("1 ((x)) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, ok := parseProcStat(b)
		if !ok && d != 0 {
			t.Fatalf("%q: %v without ok", b, d)
		}
		if ok && (d < 0 || d%(10*1e6) != 0) {
			t.Fatalf("%q: %v", b, d)
		}
	})
}
