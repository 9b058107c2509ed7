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

// Group is one invocation's control group, in each hierarchy used.
type Group struct {
	dirs    []string // first is the pids (or unified) one
	v2      bool
	memory  string   // v1 memory directory, "" if none
	cpuacct string   // v1 cpuacct directory, "" if none
	fd      *os.File // v2: the open directory, for CLONE_INTO_CGROUP

	mgr    *Manager // the pool to refill once this group is gone, if any
	limits Limits
}

// create makes the group name with limits l. A limit whose controller the
// manager's groups do not get is an error wrapping ErrNoController, and so
// is a limit the kernel refuses: no group is left behind then.
func (m *Manager) create(name string, l Limits) (*Group, error) {
	switch {
	case l.Pids > 0 && !m.hasPids:
		return nil, fmt.Errorf("%w: cannot limit processes to %d: no pids controller under %s", ErrNoController, l.Pids, m.pids)
	case l.MemoryBytes > 0 && !m.hasMemory:
		return nil, fmt.Errorf("%w: cannot limit memory to %d bytes: no memory controller under %s", ErrNoController, l.MemoryBytes, m.pids)
	}
	g := &Group{v2: m.v2, limits: l}
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
		if m.v2 {
			err = errors.Join(err, set(g.dirs[0], "memory.max", l.MemoryBytes))
			// No swap either, where the kernel accounts for it at all.
			err = errors.Join(err, setIfPresent(g.dirs[0], "memory.swap.max", 0))
		} else {
			dir := filepath.Join(m.memory, name)
			if err = errors.Join(err, mk(dir)); err == nil {
				g.memory = dir
				err = set(dir, "memory.limit_in_bytes", l.MemoryBytes)
				// No swap either: memory and swap together within the same
				// limit, where the kernel accounts for swap (swapaccount=1;
				// the file exists only then).
				if err == nil {
					err = setIfPresent(dir, "memory.memsw.limit_in_bytes", l.MemoryBytes)
				}
			}
		}
	}
	if m.cpuacct != "" && err == nil {
		// Accounting only: a host without it reports no group CPU time.
		if dir := filepath.Join(m.cpuacct, name); mk(dir) == nil {
			g.cpuacct = dir
		}
	}
	if m.v2 && err == nil {
		g.fd, err = os.OpenFile(g.dirs[0], os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		g.discard()
		return nil, fmt.Errorf("cgroup: set limits: %w", err)
	}
	return g, nil
}

// setIfPresent writes v to the control file dir/file if the kernel has it.
// os.WriteFile would not do: it opens with O_CREATE, which cgroupfs answers
// with EACCES, not ENOENT, for a file it does not have.
func setIfPresent(dir, file string, v int64) error {
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(v, 10))
	return errors.Join(err, f.Close())
}

// FD is the open group directory a process can be cloned into
// (CLONE_INTO_CGROUP, v2 only), or -1. Close closes it.
func (g *Group) FD() int {
	if g.fd == nil {
		return -1
	}
	return int(g.fd.Fd())
}

// Path is the group's directory in the pids (or unified) hierarchy.
func (g *Group) Path() string {
	if len(g.dirs) == 0 {
		return ""
	}
	return g.dirs[0]
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
	pids := g.members()
	if len(pids) > 0 {
		afterList()
		killMembers(pids, g.members)
	}
	return len(pids)
}

// afterList is called between listing a group's members and killing them;
// a test sets it to let a listed member end and its pid be taken.
var afterList = func() {}

// members lists the processes in the group; nil when it cannot be read.
func (g *Group) members() []int {
	if len(g.dirs) == 0 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(g.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Close kills what is left and removes the group, in the background: the
// group is never used again, killed processes can take a moment to leave
// (a pid namespace is torn down asynchronously), and removal is no part of
// the run. Removal kills again on each try, for up to ten seconds. A group
// from a Manager then has the manager prepare its replacement.
func (g *Group) Close() error {
	if g.fd != nil {
		g.fd.Close()
		g.fd = nil
	}
	dirs, v2, mgr, l := g.dirs, g.v2, g.mgr, g.limits
	g.dirs = nil
	if len(dirs) == 0 {
		return nil
	}
	bg := &Group{dirs: dirs, v2: v2}
	background.Add(1)
	go func() {
		defer background.Done()
		for try := 0; try < 1000; try++ {
			bg.Kill()
			if bg.remove() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if mgr != nil {
			mgr.refill(l)
		}
	}()
	return nil
}

// discard removes a group that was never handed out (nothing ever ran in
// it), now.
func (g *Group) discard() {
	if g.fd != nil {
		g.fd.Close()
		g.fd = nil
	}
	g.remove()
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
