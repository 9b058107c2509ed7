package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
)

// hostile builds, in a fresh directory, what a tool may leave in its
// tmpfs: a link to a secret outside, a FIFO, a file linked under several
// names, a file and a directory whose owner may not read them, and a
// setuid file.
func hostile(t *testing.T) (dir, secret string) {
	t.Helper()
	secret = filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("WRIT-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(dir, "link")))
	must(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "one"), make([]byte, 1000), 0o644))
	for _, n := range []string{"two", "three"} {
		must(os.Link(filepath.Join(dir, "one"), filepath.Join(dir, n)))
	}
	must(os.Mkdir(filepath.Join(dir, "locked"), 0o700))
	must(os.WriteFile(filepath.Join(dir, "locked", "closed"), []byte("mine"), 0o644))
	must(os.Chmod(filepath.Join(dir, "locked", "closed"), 0))
	must(os.Chmod(filepath.Join(dir, "locked"), 0o300))
	must(os.WriteFile(filepath.Join(dir, "suid"), []byte("x"), 0o755))
	must(os.Chmod(filepath.Join(dir, "suid"), 0o755|fs.ModeSetuid))
	return dir, secret
}

func roots(t *testing.T, src, dst string) (*os.Root, *os.Root) {
	t.Helper()
	s, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d, err := os.OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return s, d
}

// TestCopyTreeHostile: the hand-back of a sandbox's tmpfs (rules of
// Mirror.Close) copies a link as a link, never what it points to; leaves
// a FIFO out without blocking on it; copies a file linked three times three
// times, each counted; reads what the tool made unreadable to its owner;
// drops the setuid bit.
func TestCopyTreeHostile(t *testing.T) {
	src, secret := hostile(t)
	dst := t.TempDir()
	s, d := roots(t, src, dst)
	done := make(chan error, 1)
	go func() { done <- copyTree(s, d, newBudget(1<<20), rules{unlock: true}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the copy blocked (on the FIFO?)")
	}
	if target, err := os.Readlink(filepath.Join(dst, "link")); err != nil || target != secret {
		t.Errorf("link: got %q, %v; want a link to %s", target, err, secret)
	}
	if _, err := os.Lstat(filepath.Join(dst, "fifo")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("fifo: got %v, want it left out", err)
	}
	for _, n := range []string{"one", "two", "three"} {
		fi, err := os.Lstat(filepath.Join(dst, n))
		if err != nil || fi.Size() != 1000 {
			t.Fatalf("%s: got %v, %v", n, fi, err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Nlink != 1 {
			t.Errorf("%s: %d links, want a file of its own", n, st.Nlink)
		}
	}
	// The modes are the tool's, the contents were read all the same.
	os.Chmod(filepath.Join(dst, "locked"), 0o700)
	os.Chmod(filepath.Join(dst, "locked", "closed"), 0o600)
	if b, err := os.ReadFile(filepath.Join(dst, "locked", "closed")); err != nil || string(b) != "mine" {
		t.Errorf("locked/closed: got %q, %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "suid")); err != nil || fi.Mode()&fs.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("suid: got %v, %v; want 0755 without setuid", fi.Mode(), err)
	}
}

// TestCopyTreeBudget: a copy stops with ErrDiskLimit past its bytes (a file
// linked under many names counts each time; a sparse file its whole
// length) or past its entries, having copied no more than allowed.
func TestCopyTreeBudget(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(t *testing.T, dir string)
	}{
		{"Hardlinks", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "f"), make([]byte, 100<<10), 0o644)
			for i := range 20 {
				if err := os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "l"+strings.Repeat("x", i))); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"Sparse", func(t *testing.T, dir string) {
			f, err := os.Create(filepath.Join(dir, "sparse"))
			if err == nil {
				err = f.Truncate(1 << 40)
				f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"FIFOs", func(t *testing.T, dir string) {
			for i := range 300 {
				if err := unix.Mkfifo(filepath.Join(dir, "p"+strings.Repeat("x", i%50)+string(rune('a'+i/50))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"Entries", func(t *testing.T, dir string) {
			for i := range 300 {
				if err := os.Mkdir(filepath.Join(dir, "d"+strings.Repeat("x", i%50)+string(rune('a'+i/50))), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			c.build(t, src)
			s, d := roots(t, src, dst)
			const size = 1 << 20 // 256 entries
			err := copyTree(s, d, newBudget(size), rules{unlock: true})
			if !errors.Is(err, ErrDiskLimit) {
				t.Fatalf("got %v, want ErrDiskLimit", err)
			}
			var bytes, entries int64
			filepath.WalkDir(dst, func(p string, e fs.DirEntry, err error) error {
				if err == nil && p != dst {
					entries++
					if fi, err := e.Info(); err == nil && e.Type().IsRegular() {
						bytes += fi.Size()
					}
				}
				return nil
			})
			if bytes > size || entries > size/4096 {
				t.Errorf("copied %d bytes in %d entries, limit %d bytes in %d", bytes, entries, size, size/4096)
			}
		})
	}
}

// TestCopyTreeCountsInodesFirst: a tmpfs holding more inodes than the copy
// may take is refused before any entry is read or copied, so that one
// directory of a tool's FIFOs is never listed whole.
func TestCopyTreeCountsInodesFirst(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	src, dst := t.TempDir(), t.TempDir()
	if err := unix.Mount("tmpfs", src, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(src, unix.MNT_DETACH) })
	for i := range 300 {
		if err := unix.Mkfifo(filepath.Join(src, "p"+strings.Repeat("x", i%50)+string(rune('a'+i/50))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, d := roots(t, src, dst)
	if err := copyTree(s, d, newBudget(1<<20), rules{unlock: true}); !errors.Is(err, ErrDiskLimit) || !strings.Contains(err.Error(), "300 entries") {
		t.Fatalf("got %v, want ErrDiskLimit for 300 entries", err)
	}
	if got, _ := os.ReadDir(dst); len(got) != 0 {
		t.Errorf("%d entries copied before the refusal", len(got))
	}
}
