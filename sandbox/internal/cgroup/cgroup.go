// Package cgroup puts one tool invocation in its own control group so that
// its processes can be counted, limited (pids, memory) and killed as a
// whole, on cgroup v1 (one hierarchy per controller) and v2 (unified).
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Root is where the cgroup filesystems are mounted.
const Root = "/sys/fs/cgroup"

// ErrUnsupported means the host offers no writable pids controller.
var ErrUnsupported = errors.New("cgroup: no writable pids controller")

// Limits for one group; zero means no limit.
type Limits struct {
	Pids        int64
	MemoryBytes int64
}

// Manager creates groups under one parent, e.g. /sys/fs/cgroup/pids/writ on
// v1 or /sys/fs/cgroup/writ on v2.
type Manager struct {
	v2      bool
	pids    string // parent directory in the pids (or unified) hierarchy
	memory  string // parent directory in the v1 memory hierarchy, "" if none
	cpuacct string // parent directory in the v1 cpuacct hierarchy, "" if none
}

// Detect finds a writable pids controller and prepares parent under it.
func Detect(parent string) (*Manager, error) {
	if b, err := os.ReadFile(filepath.Join(Root, "cgroup.controllers")); err == nil {
		if !strings.Contains(" "+string(b)+" ", " pids") {
			return nil, fmt.Errorf("%w: v2 without the pids controller", ErrUnsupported)
		}
		dir := filepath.Join(Root, parent)
		// The root cgroup may hand controllers down; our parent then hands
		// them to the per-invocation groups (no processes live in it).
		_ = os.WriteFile(filepath.Join(Root, "cgroup.subtree_control"), []byte("+pids +memory"), 0)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids +memory"), 0); err != nil {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
			}
		}
		return &Manager{v2: true, pids: dir}, nil
	}
	m := &Manager{pids: filepath.Join(Root, "pids", parent)}
	if err := os.MkdirAll(m.pids, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if _, err := os.Stat(filepath.Join(m.pids, "pids.max")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	mem := filepath.Join(Root, "memory", parent)
	if err := os.MkdirAll(mem, 0o755); err == nil {
		m.memory = mem
	}
	acct := filepath.Join(Root, "cpuacct", parent)
	if err := os.MkdirAll(acct, 0o755); err == nil {
		m.cpuacct = acct
	}
	return m, nil
}

// Version is 1 or 2.
func (m *Manager) Version() int {
	if m.v2 {
		return 2
	}
	return 1
}

// Group is one invocation's control group, in each hierarchy used.
type Group struct {
	dirs    []string // first is the pids (or unified) one
	v2      bool
	memory  string // v1 memory directory, "" if none
	cpuacct string // v1 cpuacct directory, "" if none
}

// New creates the group name with limits.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	g := &Group{v2: m.v2}
	mk := func(dir string) error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		g.dirs = append(g.dirs, dir)
		return nil
	}
	if err := mk(filepath.Join(m.pids, name)); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	set := func(dir, file string, v int64) error {
		return os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatInt(v, 10)), 0)
	}
	var err error
	if l.Pids > 0 {
		err = errors.Join(err, set(g.dirs[0], "pids.max", l.Pids))
	}
	if l.MemoryBytes > 0 {
		switch {
		case m.v2:
			if _, statErr := os.Stat(filepath.Join(g.dirs[0], "memory.max")); statErr == nil {
				err = errors.Join(err, set(g.dirs[0], "memory.max", l.MemoryBytes))
				_ = set(g.dirs[0], "memory.swap.max", 0)
			}
		case m.memory != "":
			dir := filepath.Join(m.memory, name)
			if mk(dir) == nil {
				g.memory = dir
				err = errors.Join(err, set(dir, "memory.limit_in_bytes", l.MemoryBytes))
			}
		}
	}
	if m.cpuacct != "" {
		dir := filepath.Join(m.cpuacct, name)
		if mk(dir) == nil {
			g.cpuacct = dir
		}
	}
	if err != nil {
		g.Close()
		return nil, fmt.Errorf("cgroup: set limits: %w", err)
	}
	return g, nil
}

// Add moves pid (and so everything it will start) into the group.
func (g *Group) Add(pid int) error {
	for _, dir := range g.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: add %d: %w", pid, err)
		}
	}
	return nil
}

// Kill sends SIGKILL to every process in the group, including those that
// left the tool's session or process group. On v2 the kernel does it
// atomically (cgroup.kill); on v1 the members are listed and killed, a few
// rounds, so that a process forking meanwhile is caught too.
func (g *Group) Kill() {
	if len(g.dirs) == 0 {
		return
	}
	if g.v2 {
		_ = os.WriteFile(filepath.Join(g.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	for round := 0; round < 3; round++ {
		if g.killListed() == 0 {
			return
		}
	}
}

// killListed kills the listed members and returns how many there were.
func (g *Group) killListed() int {
	b, err := os.ReadFile(filepath.Join(g.dirs[0], "cgroup.procs"))
	if err != nil {
		return 0
	}
	n := 0
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n
}

// Close kills what is left and removes the group. Killed processes can take
// a moment to leave (a pid namespace is torn down asynchronously): when the
// group is not empty yet, removal goes on in the background, killing again
// on each try, for up to ten seconds, and Close does not wait for it.
func (g *Group) Close() error {
	g.Kill()
	if g.remove() {
		return nil
	}
	dirs, v2 := g.dirs, g.v2
	g.dirs = nil
	go func() {
		bg := &Group{dirs: dirs, v2: v2}
		for try := 0; try < 1000; try++ {
			time.Sleep(10 * time.Millisecond)
			bg.Kill()
			if bg.remove() {
				return
			}
		}
	}()
	return nil
}

// remove removes the group's directories, innermost hierarchy last, and
// reports whether all are gone.
func (g *Group) remove() bool {
	for len(g.dirs) > 0 {
		last := g.dirs[len(g.dirs)-1]
		if err := syscall.Rmdir(last); err != nil && err != syscall.ENOENT {
			return false
		}
		g.dirs = g.dirs[:len(g.dirs)-1]
	}
	return true
}
