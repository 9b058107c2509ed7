package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireHost stops a test this host cannot run: a failure under CI=true
// (root on Debian, where every case here runs), a skip otherwise.
func requireHost(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cgroup test cannot run under CI=true: %v", err)
	}
	t.Skipf("SKIPPING: %v (run as root with cgroups, or CI=true to make this a failure)", err)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		requireHost(t, errors.New("needs root"))
	}
}

// testParent is a parent group name of this test process alone; its
// directories are removed when the test ends.
func testParent(t *testing.T, m func() *Manager) string {
	name := fmt.Sprintf("writ-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
	t.Cleanup(func() {
		if mgr := m(); mgr != nil {
			mgr.Close()
			for _, dir := range []string{mgr.pids, mgr.memory, mgr.cpuacct} {
				if dir != "" {
					if err := syscall.Rmdir(dir); err != nil && err != syscall.ENOENT {
						t.Errorf("remove %s: %v (a group left in it?)", dir, err)
					}
				}
			}
		}
	})
	return name
}

// sleeper is a process that waits to be killed.
type sleeper struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it ended, with err
	err  error
}

// startSleeper starts a sleeper, cloned into group g when g is not nil.
func startSleeper(t *testing.T, g *Group) *sleeper {
	t.Helper()
	s := &sleeper{cmd: exec.Command("sleep", "600"), done: make(chan struct{})}
	if g != nil {
		s.cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.cmd.Process.Kill(); <-s.done })
	return s
}

func (s *sleeper) pid() int { return s.cmd.Process.Pid }

// killed waits for the sleeper's end and checks SIGKILL ended it.
func (s *sleeper) killed(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		var ee *exec.ExitError
		if !errors.As(s.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("process ended with %v, want SIGKILL", s.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("process still running 10 s after its group was killed")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func gone(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Close (stat: %v)", d, err)
		}
	}
}

// TestPool runs on the host's own hierarchy (v1 here, v2 on a v2 host):
// groups are made with their limits, taken once, refilled in the
// background, removed after use, and never handed out twice.
func TestPool(t *testing.T) {
	requireRoot(t)
	var m *Manager
	parent := testParent(t, func() *Manager { return m })
	m, err := Detect(parent)
	requireHost(t, err)
	t.Logf("cgroup v%d, memory controller: %v", m.Version(), m.Memory())
	if !m.Memory() && os.Getenv("CI") == "true" {
		t.Fatal("no memory controller under CI=true")
	}
	l := Limits{Pids: 16, MemoryBytes: 64 << 20}
	checkLimits := func(g *Group) {
		t.Helper()
		if got := readFile(t, filepath.Join(g.Path(), "pids.max")); got != "16" {
			t.Errorf("pids.max = %s, want 16", got)
		}
		mem := filepath.Join(g.memory, "memory.limit_in_bytes")
		if m.v2 {
			mem = filepath.Join(g.Path(), "memory.max")
		}
		if got := readFile(t, mem); got != strconv.Itoa(64<<20) {
			t.Errorf("%s = %s, want %d", mem, got, 64<<20)
		}
		// No swap beyond the limit, where the kernel accounts for swap.
		swap, want := filepath.Join(g.memory, "memory.memsw.limit_in_bytes"), strconv.Itoa(64<<20)
		if m.v2 {
			swap, want = filepath.Join(g.Path(), "memory.swap.max"), "0"
		}
		if _, err := os.Stat(swap); err == nil {
			if got := readFile(t, swap); got != want {
				t.Errorf("%s = %s, want %s", swap, got, want)
			}
		}
		if !g.empty() {
			t.Errorf("group %s taken with processes in it", g.Path())
		}
	}

	first, err := m.Take(l)
	if err != nil {
		t.Fatal(err)
	}
	checkLimits(first)
	firstDirs := slices.Clone(first.dirs)
	sl := startSleeper(t, nil)
	if err := first.Add(sl.pid()); err != nil {
		t.Fatal(err)
	}
	if got := first.members(); !slices.Equal(got, []int{sl.pid()}) {
		t.Fatalf("members = %v, want [%d]", got, sl.pid())
	}
	first.Close() // kills the sleeper, removes the group, refills the pool
	sl.killed(t)
	background.Wait()
	gone(t, firstDirs...)

	ready := slices.Clone(m.pool.ready[l])
	if len(ready) != poolPerKey {
		t.Fatalf("%d groups ready after a run, want %d", len(ready), poolPerKey)
	}
	seen := map[string]bool{first.Path(): true, "": true}
	for i := 0; i < 2*poolPerKey; i++ {
		g, err := m.Take(l)
		if err != nil {
			t.Fatal(err)
		}
		if seen[g.Path()] {
			t.Fatalf("group %s handed out twice", g.Path())
		}
		seen[g.Path()] = true
		checkLimits(g)
		if i == 0 && !slices.Contains(ready, g) {
			t.Errorf("Take made a group although %d were ready", len(ready))
		}
		g.Close()
		background.Wait()
	}

	t.Run("NeverWithProcesses", func(t *testing.T) {
		// A process put into a ready group behind the manager's back: the
		// group is never handed out, and is killed and removed instead.
		background.Wait()
		ready := m.pool.ready[l]
		if len(ready) == 0 {
			t.Fatal("no group ready")
		}
		dirty := ready[len(ready)-1]
		dirtyDirs := slices.Clone(dirty.dirs)
		sl := startSleeper(t, nil)
		if err := dirty.Add(sl.pid()); err != nil {
			t.Fatal(err)
		}
		g, err := m.Take(l)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if g == dirty || g.Path() == dirtyDirs[0] {
			t.Fatalf("Take handed out %s with process %d in it", g.Path(), sl.pid())
		}
		sl.killed(t)
		background.Wait()
		gone(t, dirtyDirs...)
	})

	t.Run("FewLimitSets", func(t *testing.T) {
		for i := int64(1); i <= poolKeys+2; i++ {
			g, err := m.Take(Limits{Pids: i})
			if err != nil {
				t.Fatal(err)
			}
			g.Close()
			background.Wait()
		}
		m.pool.mu.Lock()
		n, keys := 0, len(m.pool.keys)
		for _, gs := range m.pool.ready {
			n += len(gs)
		}
		m.pool.mu.Unlock()
		if keys > poolKeys || n > poolKeys*poolPerKey {
			t.Fatalf("pool holds %d groups for %d sets of limits, want at most %d for %d", n, keys, poolKeys*poolPerKey, poolKeys)
		}
	})

	t.Run("NoController", func(t *testing.T) {
		// A manager whose groups get no memory controller refuses a memory
		// limit and leaves nothing behind, rather than ignore the limit.
		nomem := &Manager{v2: m.v2, pids: m.pids, cpuacct: m.cpuacct, hasPids: true}
		before, _ := os.ReadDir(m.pids)
		_, err := nomem.Take(Limits{Pids: 8, MemoryBytes: 1 << 20})
		if !errors.Is(err, ErrNoController) || !strings.Contains(err.Error(), "memory") {
			t.Fatalf("got %v, want ErrNoController about memory", err)
		}
		after, _ := os.ReadDir(m.pids)
		if len(after) != len(before) {
			t.Fatalf("refused Take left a directory under %s", m.pids)
		}
	})

	m.Close()
	entries, _ := os.ReadDir(m.pids)
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("group %s left after Close", e.Name())
		}
	}
}

// TestStale removes the groups of an agent that is gone, in every
// hierarchy, and leaves a live one's alone.
func TestStale(t *testing.T) {
	requireRoot(t)
	var m *Manager
	parent := testParent(t, func() *Manager { return m })
	m, err := Detect(parent)
	requireHost(t, err)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	staleName := fmt.Sprintf("%d-1", dead.Process.Pid)
	stale, err := m.create(staleName, Limits{Pids: 4})
	if err != nil {
		t.Fatal(err)
	}
	live, err := m.Take(Limits{Pids: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	m.CleanStale()
	background.Wait()
	gone(t, stale.dirs...)
	for _, d := range live.dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("live group removed: %v", err)
		}
	}
}
