package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
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
	h.x.workspaces.remove(ws)
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Fatalf("workspace still there after the run: %v", err)
	}
	if strings.Contains(mountinfo(t), " "+ws+" ") {
		t.Fatalf("the workspace's tmpfs is still mounted")
	}
}

// TestUntouchedWorkspaceKeptForTheNextRun: the workspace of a wasm run,
// which the tool saw only through the tmpfs mounted over it, is kept empty
// for the next run, which runs in it; one a tool may have written in (the
// process tier's) is removed after its run, and Close removes the kept ones.
func TestUntouchedWorkspaceKeptForTheNextRun(t *testing.T) {
	testtier.Root(t, "mounts a tmpfs over a workspace")
	h := newHarness(t, 2)
	work := filepath.Join(h.dir, "work")
	spare := func() []string {
		t.Helper()
		entries, err := os.ReadDir(work)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
			inside, err := os.ReadDir(filepath.Join(work, e.Name()))
			if err != nil || len(inside) != 0 {
				t.Fatalf("workspace %s holds %v (%v); want nothing", e.Name(), inside, err)
			}
			if fi, err := os.Stat(filepath.Join(work, e.Name())); err != nil || fi.Mode().Perm() != 0o777 {
				t.Fatalf("workspace %s: %v (%v); want mode 0777", e.Name(), fi.Mode(), err)
			}
		}
		return names
	}
	run := func(tool, params string) {
		t.Helper()
		d := h.dispatch(tool, params)
		if err := h.x.Handle(context.Background(), sign(t, d, serverKey), servers); err != nil {
			t.Fatal(err)
		}
		if r := h.outbox()[d.ID]; r == nil || r.Status != protocol.StatusOK {
			t.Fatalf("%s: %+v", tool, r)
		}
	}
	run("echo", `{"msg":"first"}`)
	first := spare()
	if len(first) != 1 || !strings.HasPrefix(first[0], workspacePrefix) {
		t.Fatalf("after a wasm run the work directory holds %v; want its workspace, kept", first)
	}
	run("echo", `{"msg":"second"}`)
	if again := spare(); len(again) != 1 || again[0] != first[0] {
		t.Fatalf("after a second wasm run the work directory holds %v; want %v, used again", again, first)
	}
	if strings.Contains(mountinfo(t), " "+filepath.Join(work, first[0])+" ") {
		t.Fatal("the kept workspace is still mounted")
	}
	run("witness", h.witnessParams(false))
	if left := spare(); len(left) != 0 {
		t.Fatalf("after a process run in the kept workspace the work directory holds %v; want nothing", left)
	}
	run("echo", `{"msg":"third"}`)
	h.x.Close()
	if left := spare(); len(left) != 0 {
		t.Fatalf("after Close the work directory holds %v; want nothing", left)
	}
}

func mountinfo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
