package controlplane

import (
	"slices"
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
