package sandboxtest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BusyboxRootfs builds a minimal root filesystem for container tiers in a
// temporary directory: busybox-static with a few harmless applets (no
// shell), and the empty directories the tiers mount over. It stops the
// test the way RequireAvailable does when busybox is not installed.
func BusyboxRootfs(t testing.TB) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		RequireAvailable(t, "busybox rootfs", err)
	}
	root := t.TempDir()
	os.Chmod(root, 0o755)
	for _, dir := range []string{"bin", "dev", "proc", "sys", "tmp", "workspace", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in, err := os.Open(bb)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(root, "bin", "busybox"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	for _, applet := range []string{"cat", "ls", "true", "false", "echo", "id"} {
		os.Symlink("busybox", filepath.Join(root, "bin", applet))
	}
	os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0::/:/bin/false\nnobody:x:65534:65534::/:/bin/false\n"), 0o644)
	return root
}
