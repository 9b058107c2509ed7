package cgroup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/eventually"
)

// v2Mount returns where the unified (v2) hierarchy is mounted: the cgroup
// root on a v2 host, its "unified" directory on a hybrid one (Debian with
// systemd's hybrid layout, and this project's CI machine).
func v2Mount(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{Root, filepath.Join(Root, "unified")} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir
		}
	}
	requireHost(t, errors.New("no cgroup v2 hierarchy mounted at "+Root+" or "+Root+"/unified"))
	return ""
}

// TestV2 exercises the v2 code for real wherever a v2 hierarchy is
// mounted. On a hybrid host it has no controllers (they are bound to the
// v1 hierarchies), so limits are refused with ErrNoController; making,
// cloning into, filling, killing, accounting and removing groups is the
// same code a v2 host runs.
func TestV2(t *testing.T) {
	requireRoot(t)
	mount := v2Mount(t)
	var m *Manager
	parent := testParent(t, func() *Manager { return m })
	m, err := DetectV2(mount, parent)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version() != 2 {
		t.Fatalf("version %d, want 2", m.Version())
	}
	controllers := readFile(t, filepath.Join(mount, "cgroup.controllers"))
	t.Logf("v2 at %s, controllers %q, groups get pids=%v memory=%v", mount, controllers, m.hasPids, m.hasMemory)

	t.Run("LimitsFailClosed", func(t *testing.T) {
		cases := []struct {
			l    Limits
			have bool
			want string
		}{
			{Limits{Pids: 8}, m.hasPids, "pids"},
			{Limits{MemoryBytes: 32 << 20}, m.hasMemory, "memory"},
		}
		for _, c := range cases {
			g, err := m.Take(c.l)
			if c.have {
				if err != nil {
					t.Fatalf("Take(%+v): %v", c.l, err)
				}
				g.Close()
				continue
			}
			if !errors.Is(err, ErrNoController) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Take(%+v) = %v, want ErrNoController about %s", c.l, err, c.want)
			}
		}
		if !m.hasPids {
			// Detect refuses such a hierarchy, saying so, rather than run
			// tools without a process limit.
			if err := requirePids(m); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "pids") {
				t.Fatalf("got %v, want ErrUnsupported about pids", err)
			}
		}
	})

	g, err := m.Take(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := g.Path()
	if g.FD() < 0 {
		t.Fatal("v2 group has no descriptor to clone into")
	}
	if !g.empty() {
		t.Fatal("new group not empty")
	}

	// Born in the group (CLONE_INTO_CGROUP), as the tiers start tools.
	born := startSleeper(t, g)
	rel := strings.TrimPrefix(dir, mount)
	if got := v2CgroupOf(t, born.pid()); got != rel {
		t.Fatalf("/proc/%d/cgroup says %q, want %q", born.pid(), got, rel)
	}
	// Moved in, as on the fallback path.
	moved := startSleeper(t, nil)
	if err := g.Add(moved.pid()); err != nil {
		t.Fatal(err)
	}
	if got := v2CgroupOf(t, moved.pid()); got != rel {
		t.Fatalf("moved process is in %q, want %q", got, rel)
	}
	if got := len(g.members()); got != 2 {
		t.Fatalf("%d members, want 2", got)
	}
	if !populated(t, dir) {
		t.Fatal("cgroup.events says not populated with two processes in it")
	}
	if _, ok := g.CPU(); !ok {
		t.Error("no CPU accounting from cpu.stat")
	}

	g.Kill() // cgroup.kill
	born.killed(t)
	moved.killed(t)
	eventually.True(t, "cgroup.events to say not populated after cgroup.kill", func() bool { return !populated(t, dir) })

	g.Close()
	background.Wait()
	gone(t, dir)
}

// v2CgroupOf is pid's group in the unified hierarchy ("0::" line).
func v2CgroupOf(t *testing.T, pid int) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, fmt.Sprintf("/proc/%d/cgroup", pid)), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	t.Fatalf("no v2 line in /proc/%d/cgroup", pid)
	return ""
}

func populated(t *testing.T, dir string) bool {
	t.Helper()
	for _, line := range strings.Split(readFile(t, filepath.Join(dir, "cgroup.events")), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v == "1"
		}
	}
	t.Fatalf("no populated line in %s/cgroup.events", dir)
	return false
}
