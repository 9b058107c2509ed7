package interp

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// missing stops a test whose host program is absent: a failure under
// CI=true, where make deps installs everything the tests use; a skip otherwise.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		missing(t, "no %s on this host: %v", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, d *Detector, path string, argv ...string) error {
	t.Helper()
	f, real, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	defer f.Close()
	return d.Check(f, real, append([]string{path}, argv...))
}

func TestDetector(t *testing.T) {
	t.Parallel()
	d := NewDetector(nil)
	if d.Known() == 0 {
		t.Fatal("host scan found no interpreter at all; expected at least /bin/sh")
	}
	dir := t.TempDir()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, sh, filepath.Join(dir, "innocent"))
	if err := os.Link(filepath.Join(dir, "innocent"), filepath.Join(dir, "hardlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sh, filepath.Join(dir, "tool")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script"), []byte("#!/usr/bin/awk -f\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	trueBin, _ := filepath.EvalSymlinks("/bin/true")
	copyFile(t, trueBin, filepath.Join(dir, "python3"))

	denied := map[string][]string{
		"symlink to sh": {filepath.Join(dir, "tool")},
		"renamed copy":  {filepath.Join(dir, "innocent")},
		"hard link":     {filepath.Join(dir, "hardlink")},
		"script":        {filepath.Join(dir, "script")},
		"name python3":  {filepath.Join(dir, "python3")},
		"env launcher":  {"/usr/bin/env", "bash", "-c", "id"},
		"sh by path":    {"/bin/sh"},
	}
	for name, argv := range denied {
		t.Run(name, func(t *testing.T) {
			if err := check(t, d, argv[0], argv[1:]...); !errors.Is(err, ErrDenied) {
				t.Fatalf("got %v, want ErrDenied", err)
			}
		})
	}
	if err := check(t, d, "/bin/true"); err != nil {
		t.Errorf("/bin/true: got %v, want allowed", err)
	}
}

func TestBusyboxApplets(t *testing.T) {
	t.Parallel()
	bb, err := exec0("busybox")
	if err != nil {
		missing(t, "busybox not installed (make deps installs busybox-static)")
	}
	d := NewDetector(nil)
	dir := t.TempDir()
	copyFile(t, bb, filepath.Join(dir, "bb"))
	copyFile(t, bb, filepath.Join(dir, "busybox.copy"))
	os.Symlink(filepath.Join(dir, "bb"), filepath.Join(dir, "cat"))
	os.Symlink(filepath.Join(dir, "bb"), filepath.Join(dir, "ash"))
	if err := check(t, d, filepath.Join(dir, "cat")); err != nil {
		t.Errorf("busybox as cat: got %v, want allowed", err)
	}
	for _, argv := range [][]string{{filepath.Join(dir, "ash")}, {filepath.Join(dir, "busybox.copy"), "sh"}, {bb, "env"}, {bb}} {
		if err := check(t, d, argv[0], argv[1:]...); !errors.Is(err, ErrDenied) {
			t.Errorf("%q: got %v, want ErrDenied", argv, err)
		}
	}
}

func exec0(name string) (string, error) {
	for _, dir := range []string{"/bin", "/usr/bin"} {
		if p, err := filepath.EvalSymlinks(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

func TestDenied(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"python3.11", "perl5.36.0", "lua5.4", "ld-linux-x86-64.so.2", "bash", "env"} {
		if !Denied(n) {
			t.Errorf("Denied(%q) = false", n)
		}
	}
	for _, n := range []string{"shred", "true", "jq", "grep", "pythonista", "nodemon"} {
		if Denied(n) {
			t.Errorf("Denied(%q) = true", n)
		}
	}
}
