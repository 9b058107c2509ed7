package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

// TestLimitScratchOpenFileAtClose: a file of the scratch tmpfs still open
// when the run's Close unmounts it (a descriptor the run did not close)
// does not make the unmount fail or leave the tmpfs on the directory
// (MNT_DETACH), and what is written through it afterwards stays in the
// detached tmpfs, bounded by its size: nothing reaches the directory on
// the host disk.
func TestLimitScratchOpenFileAtClose(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	q, err := LimitScratch(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		q.Close()
		t.Fatal(err)
	}
	defer f.Close()
	if err := q.Close(); err != nil {
		t.Fatalf("Close with a file of the tmpfs open: %v; want the tmpfs detached", err)
	}
	if tmpfsOn(t, dir) {
		t.Fatal("Close left the tmpfs mounted on the directory")
	}
	if _, err := f.Write(make([]byte, 2<<20)); err == nil {
		t.Fatal("wrote 2 MiB through a held file into a detached 1 MiB scratch tmpfs")
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 0 {
		t.Fatalf("the directory after Close holds %v (%v); want it empty", names, err)
	}
}
