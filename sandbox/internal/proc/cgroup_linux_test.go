package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/cgroup"
)

func requireHost(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot run under CI=true: %v", err)
	}
	t.Skipf("SKIPPING: %v (run as root, or CI=true to make this a failure)", err)
}

// TestCgroupV2Placement runs a process the way the tiers do in a group of
// the unified hierarchy (the host's own on a v2 host, the "unified" one on
// a hybrid host): cloned into it, and, where the kernel cannot, moved in
// at its exec stop. Either way its first instruction runs in the group.
func TestCgroupV2Placement(t *testing.T) {
	if os.Geteuid() != 0 {
		requireHost(t, errors.New("needs root"))
	}
	mount := ""
	for _, dir := range []string{cgroup.Root, filepath.Join(cgroup.Root, "unified")} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			mount = dir
			break
		}
	}
	if mount == "" {
		requireHost(t, errors.New("no cgroup v2 hierarchy mounted"))
	}
	parent := fmt.Sprintf("writ-test-%d-proc", os.Getpid())
	m, err := cgroup.DetectV2(mount, parent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		if err := os.Remove(m.Parent()); err != nil {
			t.Errorf("remove %s: %v", m.Parent(), err)
		}
	})
	defer cloneIntoBroken.Store(false)
	for _, broken := range []bool{false, true} {
		cloneIntoBroken.Store(broken)
		g, err := m.Take(cgroup.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		limits := sandbox.DefaultLimits()
		limits.Pids, limits.MemoryBytes = 0, 0 // no controllers on a hybrid host
		want := "0::" + strings.TrimPrefix(g.Path(), mount) + "\n"
		out, err := Run(context.Background(), Spec{Tier: "test", Path: "/bin/cat",
			Args: []string{"cat", "/proc/self/cgroup"}, Env: []string{}, Dir: "/",
			Limits: limits, Cgroup: g})
		g.Close()
		if err != nil || out.Status != sandbox.StatusOK {
			t.Fatalf("moved in at exec stop=%v: %v %s %s", broken, err, out.Status, out.Stderr)
		}
		if !strings.Contains(string(out.Output), want) {
			t.Fatalf("moved in at exec stop=%v: the tool ran outside its group:\n%s(want the line %q)", broken, out.Output, want)
		}
	}
}
