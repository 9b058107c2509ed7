package controlplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestErrorPlaces: a policy error is logged with its policy and position,
// never with Cedar's message, which quotes values (params).
func TestErrorPlaces(t *testing.T) {
	got := errorPlaces([]string{
		`policy "p1" at line 3, column 5: integer overflow while attempting to add ` + "`9223372036854775807` with `1`",
		`policy "p2" at line 1, column 1`,
		`something else: with a secret`,
	})
	want := []string{`policy "p1" at line 3, column 5`, `policy "p2" at line 1, column 1`, "(a policy error)"}
	if !slices.Equal(got, want) {
		t.Fatalf("errorPlaces = %q, want %q", got, want)
	}
}

// FuzzErrorPlaces: whatever a policy's id and Cedar's message are, the
// logged place is a prefix of the error that ends before the message.
func FuzzErrorPlaces(f *testing.F) {
	f.Add("p1", 3, 5, "integer overflow while attempting to add `1` with `2`")
	f.Add("a, column 1: b", 1, 1, "secret")
	f.Add("", 0, 0, "")
	f.Fuzz(func(t *testing.T, id string, line, col int, msg string) {
		e := fmt.Sprintf("policy %q at line %d, column %d: %s", id, line, col, msg)
		got := errorPlaces([]string{e})
		if len(got) != 1 || !strings.HasPrefix(e, got[0]) || len(got[0]) > len(e)-len(": "+msg) {
			t.Fatalf("errorPlaces(%q) = %q", e, got)
		}
	})
}
