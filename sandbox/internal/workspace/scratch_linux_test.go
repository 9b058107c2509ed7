package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

// TestLimitScratch: a scratch workspace's tmpfs is mounted empty (what the
// directory holds is not copied in), bounds the run, is shared only with
// another scratch run, and Close unmounts it without copying anything back:
// the directory holds what it held before, and nothing the run wrote.
func TestLimitScratch(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "before"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := LimitScratch(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !q.Enforced() || !q.Fresh() || !tmpfsOn(t, dir) {
		t.Fatalf("under LimitScratch: enforced %v, fresh %v, tmpfs %v; want all", q.Enforced(), q.Fresh(), tmpfsOn(t, dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "before")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the scratch tmpfs shows the directory's file (%v); want it empty", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644); err == nil {
		t.Fatal("wrote 2 MiB into a 1 MiB scratch workspace")
	}
	if err := os.Remove(filepath.Join(dir, "big")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "out"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}

	if k, err := Limit(dir, 1<<20); err == nil {
		k.Close()
		t.Fatal("a run that keeps its writes joined a scratch run's tmpfs")
	}
	second, err := LimitScratch(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Enforced() || second.Fresh() || second.shared != q.shared || mountsOn(t, dir) != 1 {
		t.Fatalf("a second scratch run: enforced %v, fresh %v, %d tmpfs mounted; want the first run's, not fresh",
			second.Enforced(), second.Fresh(), mountsOn(t, dir))
	}
	if err := second.Close(); err != nil || !tmpfsOn(t, dir) {
		t.Fatalf("the second run's Close (%v) unmounted the first run's tmpfs", err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if tmpfsOn(t, dir) {
		t.Fatal("Close left the tmpfs mounted")
	}
	names, err := os.ReadDir(dir)
	if err != nil || len(names) != 1 || names[0].Name() != "before" {
		t.Fatalf("the directory after Close holds %v (%v); want only what it held before", names, err)
	}

	// Joined the other way: a scratch run refused on a keeping run's tmpfs.
	k, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if s, err := LimitScratch(dir, 1<<20); err == nil {
		s.Close()
		t.Fatal("a scratch run joined the tmpfs of a run that keeps its writes")
	}
}

// TestScratchDiscardedByItsHandBack: a scratch run reports its tmpfs
// discarded only when its own Close unmounted it. The run that mounted it,
// closing while another scratch run still works in it, has not: the tmpfs,
// with what the other run wrote, is still on the directory, and a caller
// that took the directory as untouched and gave it to a third run would
// show it that. Once the last run hands it back, the directory is as given.
func TestScratchDiscardedByItsHandBack(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	first, err := LimitScratch(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	second, err := LimitScratch(dir, 1<<20)
	if err != nil {
		first.Close()
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if !first.Fresh() || first.Discarded() || !tmpfsOn(t, dir) {
		t.Fatalf("the mounting run closed first: fresh %v, discarded %v, tmpfs %v; want fresh, not discarded, still mounted",
			first.Fresh(), first.Discarded(), tmpfsOn(t, dir))
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if second.Discarded() || tmpfsOn(t, dir) {
		t.Fatalf("the joined run's Close: discarded %v, tmpfs %v; want not its own to discard, unmounted", second.Discarded(), tmpfsOn(t, dir))
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Fatalf("the directory after both runs holds %v (%v); want nothing", names, err)
	}

	alone, err := LimitScratch(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Discarded() {
		t.Fatal("discarded before Close")
	}
	if err := alone.Close(); err != nil || !alone.Discarded() {
		t.Fatalf("a run alone in its scratch tmpfs: Close %v, discarded %v; want discarded", err, alone.Discarded())
	}
}
