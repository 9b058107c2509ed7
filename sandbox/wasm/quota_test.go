package wasm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// TestDiskQuota changes a workspace through the counting layer the way a
// guest would and checks what is counted, what is refused, and that the
// first refusal reports the workspace full.
func TestDiskQuota(t *testing.T) {
	const wr = experimentalsys.O_CREAT | experimentalsys.O_WRONLY
	type step struct {
		name string
		op   func(fsys experimentalsys.FS) experimentalsys.Errno
		want experimentalsys.Errno
		used int64 // after the step
	}
	write := func(path string, flag experimentalsys.Oflag, off int64, n int) func(experimentalsys.FS) experimentalsys.Errno {
		return func(fsys experimentalsys.FS) experimentalsys.Errno {
			f, e := fsys.OpenFile(path, flag, 0o644)
			if e != 0 {
				return e
			}
			defer f.Close()
			if off >= 0 {
				_, e = f.Pwrite(make([]byte, n), off)
			} else {
				_, e = f.Write(make([]byte, n))
			}
			return e
		}
	}
	truncate := func(path string, size int64) func(experimentalsys.FS) experimentalsys.Errno {
		return func(fsys experimentalsys.FS) experimentalsys.Errno {
			f, e := fsys.OpenFile(path, experimentalsys.O_WRONLY, 0)
			if e != 0 {
				return e
			}
			defer f.Close()
			return f.Truncate(size)
		}
	}
	const limit = 64 << 10
	steps := []step{
		{"create and write 10 KiB", write("a", wr, -1, 10<<10), 0, entryBytes + 10<<10},
		{"append 2 KiB", write("a", wr|experimentalsys.O_APPEND, -1, 2<<10), 0, entryBytes + 12<<10},
		{"overwrite in place adds nothing", write("a", experimentalsys.O_WRONLY, 0, 4<<10), 0, entryBytes + 12<<10},
		{"sparse write counts its whole length", write("b", wr, 20<<10, 1), 0, 2*entryBytes + 12<<10 + 20<<10 + 1},
		{"truncate shrinks", truncate("b", 1<<10), 0, 2*entryBytes + 13<<10},
		{"truncate past the limit refused", truncate("b", limit), errDiskLimit, 2*entryBytes + 13<<10},
		{"write past the limit refused", write("a", experimentalsys.O_WRONLY, 0, limit), errDiskLimit, 2*entryBytes + 13<<10},
		{"mkdir", func(f experimentalsys.FS) experimentalsys.Errno { return f.Mkdir("d", 0o755) }, 0, 3*entryBytes + 13<<10},
		{"hard link adds an entry only", func(f experimentalsys.FS) experimentalsys.Errno { return f.Link("a", "d/a") }, 0, 4*entryBytes + 13<<10},
		{"unlink of one of two names keeps the bytes", func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("a") }, 0, 3*entryBytes + 13<<10},
		{"rename over a file frees it", func(f experimentalsys.FS) experimentalsys.Errno { return f.Rename("b", "d/a") }, 0, 2*entryBytes + 1<<10},
		{"O_TRUNC frees the old length", write("d/a", experimentalsys.O_WRONLY|experimentalsys.O_TRUNC, -1, 0), 0, 2 * entryBytes},
		{"unlink", func(f experimentalsys.FS) experimentalsys.Errno { return f.Unlink("d/a") }, 0, entryBytes},
		{"rmdir", func(f experimentalsys.FS) experimentalsys.Errno { return f.Rmdir("d") }, 0, 0},
	}
	dir := t.TempDir()
	full := 0
	q, err := newDiskQuota(dir, limit, func() { full++ })
	if err != nil {
		t.Fatal(err)
	}
	fsys := &quotaFS{FS: sysfs.DirFS(dir), q: q}
	for _, s := range steps {
		if got := s.op(fsys); got != s.want {
			t.Fatalf("%s: got errno %v, want %v", s.name, got, s.want)
		}
		if q.used != s.used {
			t.Fatalf("%s: %d bytes counted, want %d", s.name, q.used, s.used)
		}
	}
	if !q.Full() || full != 1 {
		t.Fatalf("Full() = %v after %d calls of onFull, want true after 1", q.Full(), full)
	}
}

// TestDiskQuotaEntries: empty files count too, so a guest cannot fill the
// host's inode table within its limit.
func TestDiskQuotaEntries(t *testing.T) {
	dir := t.TempDir()
	q, err := newDiskQuota(dir, 16*entryBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	fsys := &quotaFS{FS: sysfs.DirFS(dir), q: q}
	made := 0
	for i := 0; i < 100; i++ {
		f, e := fsys.OpenFile(fmt.Sprintf("f%d", i), experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
		if e != 0 {
			break
		}
		f.Close()
		made++
	}
	if made != 16 {
		t.Fatalf("made %d empty files, want 16 (limit 16 entries)", made)
	}
}

// TestDiskQuotaStart counts what the workspace held before the run, a file
// with two names once, and refuses a workspace already above the limit.
func TestDiskQuotaStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "x"), filepath.Join(dir, "y")); err != nil {
		t.Fatal(err)
	}
	q, err := newDiskQuota(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2*entryBytes + 5000); q.used != want {
		t.Fatalf("counted %d, want %d", q.used, want)
	}
	if _, err := newDiskQuota(dir, 8000, nil); err == nil {
		t.Fatal("a workspace above its limit was accepted")
	}
}
