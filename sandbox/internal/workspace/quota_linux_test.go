package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
)

// tmpfsOn reports whether dir is on a tmpfs of Limit's, by the mount table.
func tmpfsOn(t *testing.T, dir string) bool {
	t.Helper()
	dir, err := resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := isOurs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ours
}

// TestLimit: the workspace is a tmpfs of the size for the run, holding a
// copy of what it held; a second run of the same workspace meanwhile works
// in that tmpfs (it mounts none of its own); Close hands back what the run
// left and unmounts it, and the next run mounts afresh.
func TestLimit(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC || !q.Enforced() || !tmpfsOn(t, dir) {
		t.Fatalf("the workspace under Limit: type %#x (%v), enforced %v; want a tmpfs of Limit's", fs.Type, err, q.Enforced())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "in")); err != nil || string(b) != "before" {
		t.Fatalf("the tmpfs holds %q, %v; want the workspace's file", b, err)
	}

	second, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if second.Enforced() {
		t.Fatal("a second run of the same workspace mounted its own tmpfs")
	}
	if err := second.Close(); err != nil || !tmpfsOn(t, dir) {
		t.Fatalf("the second run's Close (%v) unmounted the first run's tmpfs", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "out"), []byte("after"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if tmpfsOn(t, dir) {
		t.Fatal("Close left the tmpfs mounted")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "after" {
		t.Fatalf("the workspace after Close holds %q, %v; want what the run wrote", b, err)
	}

	again, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.Enforced() || !tmpfsOn(t, dir) {
		t.Fatal("the next run after Close did not mount a tmpfs")
	}
}

// TestReleaseLeftover: Release unmounts a tmpfs that a run never handed
// back (as after a crash), and a run after it mounts its own again.
func TestReleaseLeftover(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	q, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lost"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Release(dir); err != nil {
		t.Fatal(err)
	}
	if tmpfsOn(t, dir) {
		t.Fatal("Release left the tmpfs mounted")
	}
	if _, err := os.Stat(filepath.Join(dir, "lost")); !os.IsNotExist(err) {
		t.Fatalf("what the unreleased run wrote is in the workspace: %v", err)
	}
	q.old.Close() // the run is gone: nothing hands it back

	next, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if !next.Enforced() || !tmpfsOn(t, dir) {
		t.Fatal("a run after Release did not mount its own tmpfs")
	}
}
