package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
)

// TestRemoveWorkspaceLeftMounted: a workspace a tier left mounted (its
// unmount failed) is released and removed after the run, with what the tool
// wrote in it: neither the mount nor the files outlive the run.
func TestRemoveWorkspaceLeftMounted(t *testing.T) {
	testtier.Root(t, "mounts a tmpfs over a workspace")
	h := newHarness(t, 1)
	ws, err := os.MkdirTemp(h.dir, workspacePrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("writ-workspace", ws, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ws, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(ws, "left"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.x.removeWorkspace(ws)
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace still there after the run: %v", err)
	}
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), " "+ws+" ") {
		t.Fatalf("the workspace's tmpfs is still mounted")
	}
}
