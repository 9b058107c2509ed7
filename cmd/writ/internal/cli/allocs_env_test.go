//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var allocSink []*[64]byte

// TestEnvAllocs: a process started with $WRIT_ALLOCS answers each request of
// the bench with its cumulative heap allocations, so the bench's difference
// counts what was allocated between two requests.
func TestEnvAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "self.allocs")
	t.Setenv(allocsEnv, path)
	stop := startEnvAllocs()
	defer stop()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p := &loadProc{role: "self", cmd: &exec.Cmd{Process: self}, allocsPath: path}
	before, err := p.allocs()
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	for range n {
		allocSink = append(allocSink, new([64]byte))
	}
	after, err := p.allocs()
	if err != nil {
		t.Fatal(err)
	}
	if before.Seq != 1 || after.Seq != 2 {
		t.Fatalf("answers numbered %d and %d, want 1 and 2", before.Seq, after.Seq)
	}
	// runtime/metrics counts a span's objects once the span is handed
	// back to the heap: up to a span of each size class per P may not be
	// counted yet, so the count may fall a little short of n.
	if got := after.Objects - before.Objects; got < n*9/10 {
		t.Fatalf("%d objects allocated between the answers, want at least %d", got, n*9/10)
	}
	if got := after.Bytes - before.Bytes; got < n*64*9/10 {
		t.Fatalf("%d bytes allocated between the answers, want at least %d", got, n*64*9/10)
	}
	allocSink = nil
}
