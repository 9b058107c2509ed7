package protocol_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/protocol/protocoltest"
)

// TestPublishedVectors: protocol/testdata/vectors, the copy of the protocol
// vectors the repository publishes for client implementers (`make vectors`
// refreshes it), is byte for byte the normative set the tests load.
func TestPublishedVectors(t *testing.T) {
	t.Parallel()
	shared := protocoltest.Dir(t)
	names, err := filepath.Glob(filepath.Join(shared, "*.json"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no vectors in %s: %v", shared, err)
	}
	published, _ := filepath.Glob(filepath.Join("testdata", "vectors", "*.json"))
	if len(published) != len(names) {
		t.Errorf("testdata/vectors has %d files, the normative set %d: run make vectors", len(published), len(names))
	}
	for _, n := range names {
		want, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", "vectors", filepath.Base(n)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("testdata/vectors/%s differs from the normative vectors (%v): run make vectors", filepath.Base(n), err)
		}
	}
}
