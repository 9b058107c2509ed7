package secretfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

func TestWrite(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	// An existing world-readable file is replaced by a 0600 one.
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != Mode {
		t.Errorf("mode: got %v, want %v", fi.Mode(), Mode)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		t.Errorf("owner: got %d, want the caller %d", st.Uid, os.Geteuid())
	}
	if b, _ := os.ReadFile(p); string(b) != "secret" {
		t.Errorf("content: got %q", b)
	}
	if err := WriteMode(filepath.Join(dir, "cert"), []byte("public"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "cert")); fi.Mode() != 0o644 {
		t.Errorf("WriteMode: got %v, want 0644", fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %d entries, want 2 (no temporary file left)", len(entries))
	}
}

// TestSymlinkNotFollowed: a symbolic link planted at the target is
// replaced, never written through, by Write; Create refuses it, dangling
// or not.
func TestSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "key")
	if err := os.Symlink(victim, p); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("secret")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a symlink: got %v, want fs.ErrExist", err)
	}
	if err := Write(p, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was written: %q", b)
	}
	if fi, _ := os.Lstat(p); fi.Mode() != Mode {
		t.Fatalf("the target is %v, want a regular 0600 file", fi.Mode())
	}
	dangling := filepath.Join(dir, "dangling")
	missing := filepath.Join(dir, "created-through-link")
	if err := os.Symlink(missing, dangling); err != nil {
		t.Fatal(err)
	}
	if err := Create(dangling, []byte("secret")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a dangling symlink: got %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("Create wrote through a dangling symlink")
	}
}

func TestCreate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := Create(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := Create(p, []byte("two")); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), p) {
		t.Fatalf("second Create: got %v, want fs.ErrExist naming the file", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("a refused Create changed the file: %q", b)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode fs.FileMode
		ok   bool
	}{{0o600, true}, {0o400, true}, {0o640, false}, {0o644, false}, {0o602, false}} {
		p := filepath.Join(dir, "f")
		os.WriteFile(p, nil, 0o600)
		os.Chmod(p, tc.mode)
		err := Check(p)
		if tc.ok != (err == nil) {
			t.Errorf("mode %04o: got %v, want ok %v", tc.mode, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ErrTooOpen) || !strings.Contains(err.Error(), "chmod 600 "+p)) {
			t.Errorf("mode %04o: the error %q does not name the file and the fix", tc.mode, err)
		}
	}
	if err := Check(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v", err)
	}
}

// TestCheckOwner: a 0600 file that another user owns is refused (run as
// root, which may chown; as another user the check cannot be set up).
func TestCheckOwner(t *testing.T) {
	testtier.Root(t, "to give a file to another user")
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(p); err != nil {
		t.Fatalf("root's own 0600 file: %v", err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Check(p); !errors.Is(err, ErrTooOpen) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("a file of uid 65534: %v, want it refused as not ours", err)
	}
}
