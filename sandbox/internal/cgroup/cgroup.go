// Package cgroup puts one tool invocation in its own control group so that
// its processes can be counted, limited (pids, memory) and killed as a
// whole, on cgroup v1 (one hierarchy per controller) and v2 (unified).
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is where the cgroup filesystems are mounted.
const Root = "/sys/fs/cgroup"

var (
	// ErrUnsupported means the host offers no writable pids controller.
	ErrUnsupported = errors.New("cgroup: no writable pids controller")
	// ErrNoController means a limit was asked of a controller this host
	// does not give the manager's groups: the group is not made, rather
	// than made without the limit.
	ErrNoController = errors.New("cgroup: controller not available")
)

// Limits for one group; zero means no limit.
type Limits struct {
	Pids        int64
	MemoryBytes int64
}

// Manager creates groups under one parent, e.g. /sys/fs/cgroup/pids/writ on
// v1 or /sys/fs/cgroup/writ on v2. It is safe for concurrent use.
type Manager struct {
	v2      bool
	pids    string // parent directory in the pids (or unified) hierarchy
	memory  string // parent directory in the v1 memory hierarchy, "" if none
	cpuacct string // parent directory in the v1 cpuacct hierarchy, "" if none
	// Controllers the groups get: pids.max and memory limits can be set.
	hasPids, hasMemory bool

	pool pool
}

// Detect finds a writable pids controller and prepares parent under it.
func Detect(parent string) (*Manager, error) {
	if _, err := os.Stat(filepath.Join(Root, "cgroup.controllers")); err == nil {
		m, err := DetectV2(Root, parent)
		if err == nil {
			err = requirePids(m)
		}
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return detectV1(Root, parent)
}

func requirePids(m *Manager) error {
	if !m.hasPids {
		return fmt.Errorf("%w: v2 without the pids controller for %s", ErrUnsupported, m.pids)
	}
	return nil
}

// DetectV2 prepares parent in the unified (v2) hierarchy mounted at mount
// and hands the pids and memory controllers down to it as far as the host
// lets it: the manager's groups get those it could, and a limit asked of
// one they lack is refused (ErrNoController). Detect requires pids; tests
// use DetectV2 alone on a hybrid host, whose v2 hierarchy has no
// controllers but can still make, fill, kill and remove groups.
func DetectV2(mount, parent string) (*Manager, error) {
	dir := filepath.Join(mount, parent)
	// The root cgroup may hand controllers down; our parent then hands
	// them to the per-invocation groups (no processes live in it). One
	// controller per write: a write naming one the host lacks changes
	// nothing at all.
	for _, c := range []string{"+pids", "+memory"} {
		_ = os.WriteFile(filepath.Join(mount, "cgroup.subtree_control"), []byte(c), 0)
	}
	if err := mkdirWritable(dir); err != nil {
		return nil, err
	}
	for _, c := range []string{"+pids", "+memory"} {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(c), 0)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	on := " " + strings.Join(strings.Fields(string(b)), " ") + " "
	return &Manager{v2: true, pids: dir,
		hasPids: strings.Contains(on, " pids "), hasMemory: strings.Contains(on, " memory ")}, nil
}

// detectV1 prepares parent in the pids, memory and cpuacct hierarchies
// mounted under root; only pids is required.
func detectV1(root, parent string) (*Manager, error) {
	m := &Manager{pids: filepath.Join(root, "pids", parent), hasPids: true}
	if err := mkdirWritable(m.pids); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(m.pids, "pids.max")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	mem := filepath.Join(root, "memory", parent)
	if err := mkdirWritable(mem); err == nil {
		if _, err := os.Stat(filepath.Join(mem, "memory.limit_in_bytes")); err == nil {
			m.memory, m.hasMemory = mem, true
		}
	}
	acct := filepath.Join(root, "cpuacct", parent)
	if err := mkdirWritable(acct); err == nil {
		m.cpuacct = acct
	}
	return m, nil
}

// mkdirWritable makes dir (and its parents) and checks that we can make
// groups in it: a parent made by a root agent exists for an agent that is
// not root too, which could then make no group at all.
func mkdirWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if err := unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnsupported, dir, err)
	}
	return nil
}

// Version is 1 or 2.
func (m *Manager) Version() int {
	if m.v2 {
		return 2
	}
	return 1
}

// Memory reports whether groups can have a memory limit. Where they
// cannot, a caller that asks for one gets ErrNoController: it decides
// whether to run without (the process tier then has RLIMIT_AS alone).
func (m *Manager) Memory() bool { return m.hasMemory }

// Parent is the parent group's directory in the pids (or unified) hierarchy.
func (m *Manager) Parent() string { return m.pids }
