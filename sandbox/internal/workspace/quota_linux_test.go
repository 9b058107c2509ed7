package workspace

import (
	"os"
	"path/filepath"
	"strings"
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
// in that tmpfs, bounded by it (it mounts none of its own); the last Close
// hands back what the runs left and unmounts it, and the next run mounts
// afresh.
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
	if !second.Enforced() || second.shared != q.shared || mountsOn(t, dir) != 1 {
		t.Fatalf("a second run of the same workspace: enforced %v, %d tmpfs mounted; want the first run's alone",
			second.Enforced(), mountsOn(t, dir))
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

// TestLimitLastHandsBack: when the run that mounted the tmpfs ends first,
// a run still working in it keeps it: what it writes afterwards is handed
// back with the rest when it ends, and only then is the tmpfs unmounted.
func TestLimitLastHandsBack(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	first, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "first"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if !tmpfsOn(t, dir) || second.Full() {
		t.Fatal("the first run's Close unmounted the tmpfs a second run works in")
	}
	if err := os.WriteFile(filepath.Join(dir, "second"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if tmpfsOn(t, dir) {
		t.Fatal("the last Close left the tmpfs mounted")
	}
	for name, want := range map[string]string{"first": "1", "second": "2"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Fatalf("%s after the hand-back: %q, %v", name, b, err)
		}
	}
	// A run asking for less room than the mount has is refused, and
	// changes nothing.
	big, err := Limit(dir, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	if small, err := Limit(dir, 1<<20); err == nil {
		small.Close()
		t.Fatal("a run asking for 1 MiB joined a tmpfs of 2 MiB")
	}
	if err := big.Close(); err != nil || tmpfsOn(t, dir) {
		t.Fatalf("after the refused run, the last Close: %v, tmpfs still on %v", err, tmpfsOn(t, dir))
	}
	again, err := Limit(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.shared == first.shared || !tmpfsOn(t, dir) {
		t.Fatal("a run after the hand-back joined the handed-back mount")
	}
}

// mountsOn counts the tmpfs mounts of Limit's on dir.
func mountsOn(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescape(f[4]) == dir && strings.Contains(line, " - tmpfs "+source+" ") {
			n++
		}
	}
	return n
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

// TestMountFollowsNoLinkPutInPlace: a symbolic link put where the workspace
// was after its path was resolved — in its last component or in one above
// it — gets no tmpfs mounted anywhere, and the directory it points to is
// left as it was.
func TestMountFollowsNoLinkPutInPlace(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	for _, tc := range []struct {
		name string
		link string // the component replaced by a link, relative to the base
		ws   string // the workspace, relative to the base
		want string
	}{
		{name: "last component", link: "ws", ws: "ws", want: "not a directory"},
		{name: "a parent", link: "parent", ws: "parent/ws", want: "moved while it was opened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := resolve(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			elsewhere := filepath.Join(base, "elsewhere")
			target := filepath.Join(elsewhere, filepath.Base(tc.ws))
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(target, "kept"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			ws := filepath.Join(base, tc.ws)
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			// resolve has seen a directory; the link replaces it now.
			swapped := filepath.Join(base, tc.link)
			if err := os.RemoveAll(swapped); err != nil {
				t.Fatal(err)
			}
			to := target
			if tc.link != tc.ws {
				to = elsewhere
			}
			if err := os.Symlink(to, swapped); err != nil {
				t.Fatal(err)
			}
			for _, scratch := range []bool{false, true} {
				q, err := mount(ws, 1<<20, scratch)
				if err == nil {
					q.handBack()
					t.Fatalf("scratch %v: mounted through a symbolic link", scratch)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("scratch %v: %v; want %q", scratch, err, tc.want)
				}
			}
			if n := mountsOn(t, target); n != 0 {
				t.Fatalf("%d tmpfs mounted on the link's target", n)
			}
			if b, err := os.ReadFile(filepath.Join(target, "kept")); err != nil || string(b) != "x" {
				t.Fatalf("the link's target holds %q, %v", b, err)
			}
		})
	}
}

// TestMountThroughDescriptorAsOnPath: the tmpfs mounted on the directory's
// descriptor is the directory's, as one mounted on its path would be: the
// mount table names the directory (so Release finds it), and its root has
// the directory's mode, owner and group, nosuid and nodev, for scratch and
// kept workspaces alike.
func TestMountThroughDescriptorAsOnPath(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	for _, scratch := range []bool{false, true} {
		dir, err := resolve(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o751); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 1234, 5678); err != nil {
			t.Fatal(err)
		}
		q, err := limit(dir, 1<<20, scratch)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		var fs unix.Statfs_t
		serr, ferr := unix.Stat(dir, &st), unix.Statfs(dir, &fs)
		on := tmpfsOn(t, dir)
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if !on || mountsOn(t, dir) != 0 {
			t.Fatalf("scratch %v: the mount table named the directory %v, and %d mounts stay after Close; want named, none", scratch, on, mountsOn(t, dir))
		}
		if serr != nil || ferr != nil || fs.Type != unix.TMPFS_MAGIC {
			t.Fatalf("scratch %v: stat %v, statfs %v, type %x; want a tmpfs", scratch, serr, ferr, fs.Type)
		}
		if st.Mode&0o7777 != 0o751 || st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("scratch %v: the tmpfs's root is %o %d:%d; want the directory's 751 1234:5678", scratch, st.Mode&0o7777, st.Uid, st.Gid)
		}
		if fs.Flags&unix.ST_NOSUID == 0 || fs.Flags&unix.ST_NODEV == 0 {
			t.Errorf("scratch %v: mount flags %#x; want nosuid and nodev", scratch, fs.Flags)
		}
	}
}
