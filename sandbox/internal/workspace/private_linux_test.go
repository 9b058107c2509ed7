package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
)

// TestPrivate: the private tmpfs holds a copy of the workspace, is mounted
// nowhere on the host, is bounded by its size (a write past it fails with
// ENOSPC and Full says so), and hands back what it holds, owners kept.
// A workspace that holds more than the size is refused with ErrDiskLimit.
func TestPrivate(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := NewPrivate(dir, 1<<20, 65534, 65534)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if ours, err := isOurs(dir); err != nil || ours {
		t.Fatalf("a tmpfs of ours is mounted on the workspace (%v)", err)
	}
	tmp, err := rootOf(p.tmp.Load())
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	if b, err := tmp.ReadFile("in"); err != nil || string(b) != "before" {
		t.Fatalf("the tmpfs holds %q, %v; want the workspace's file", b, err)
	}
	f, err := tmp.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.Write(make([]byte, 2<<20))
	f.Close()
	if !errors.Is(werr, syscall.ENOSPC) || !p.Full() {
		t.Fatalf("2 MiB into 1 MiB: %v, full %v; want ENOSPC and full", werr, p.Full())
	}
	tmp.Remove("big")
	if err := tmp.WriteFile("out", []byte("after"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tmp.Lchown("out", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "after" {
		t.Fatalf("handed back %q, %v", b, err)
	}
	if err := unix.Lstat(filepath.Join(dir, "out"), &st); err != nil || st.Uid != 65534 {
		t.Errorf("owner %d, %v; want 65534", st.Uid, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "big")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big: %v, want it gone", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "huge"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPrivate(dir, 1<<20, 65534, 65534); !errors.Is(err, ErrDiskLimit) {
		t.Errorf("a workspace of 2 MiB in a tmpfs of 1 MiB: %v, want ErrDiskLimit", err)
	}
}
