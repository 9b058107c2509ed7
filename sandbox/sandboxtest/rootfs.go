package sandboxtest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RootfsEnv names the root filesystem `make rootfs` built (make test sets
// it); BusyboxRootfs uses it as it is.
const RootfsEnv = "WRIT_TEST_ROOTFS"

// BusyboxRootfs returns a minimal root filesystem for container tiers:
// the one the Makefile built (RootfsEnv), or else one built the same way
// in a temporary directory: busybox-static with a few harmless applets (no
// shell), an /etc/passwd, and the empty directories the tiers mount over.
// It stops the test the way RequireAvailable does when busybox is not
// installed, and fails when RootfsEnv names something without busybox.
func BusyboxRootfs(t testing.TB) string {
	t.Helper()
	if root := os.Getenv(RootfsEnv); root != "" {
		if st, err := os.Stat(filepath.Join(root, "bin", "busybox")); err != nil || st.Mode()&0o111 == 0 {
			t.Fatalf("%s=%s has no executable bin/busybox (make rootfs builds it): %v", RootfsEnv, root, err)
		}
		return root
	}
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
