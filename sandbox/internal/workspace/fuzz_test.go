//go:build linux

package workspace

import (
	"strings"
	"testing"
)

// FuzzUnescape: mountinfo's octal escapes never make a longer string, and
// text without a backslash is left as it is.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"/tmp/a\\040b", "\\", "\\777", "\\0401", "/plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := unescape(s)
		if len(got) > len(s) {
			t.Fatalf("unescape(%q) = %q, longer", s, got)
		}
		if !strings.Contains(s, `\`) && got != s {
			t.Fatalf("unescape(%q) = %q, want it unchanged", s, got)
		}
	})
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/a\011b\134c`: "/a\tb\\c", `/x`: "/x", `\`: `\`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
