package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

var seq atomic.Uint64

// Name returns a group name unique on this host: the agent's pid and a
// sequence number, so that CleanStale can tell whose a group was.
func Name() string {
	return fmt.Sprintf("%d-%d", os.Getpid(), seq.Add(1))
}

// CleanStale kills and removes the groups left by processes that no longer
// exist (an agent that crashed mid-run, or stopped with groups made ahead
// of time). It leaves other live agents' groups alone.
func (m *Manager) CleanStale() {
	parents := []string{m.pids, m.memory, m.cpuacct}
	var stale []string
	for _, parent := range parents {
		entries, _ := os.ReadDir(parent) // "" or missing: none
		for _, e := range entries {
			owner, _, ok := strings.Cut(e.Name(), "-")
			pid, err := strconv.Atoi(owner)
			if e.IsDir() && ok && err == nil && !alive(pid) && !slices.Contains(stale, e.Name()) {
				stale = append(stale, e.Name())
			}
		}
	}
	for _, name := range stale {
		g := &Group{v2: m.v2}
		for _, parent := range parents {
			if parent == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(parent, name)); err == nil {
				g.dirs = append(g.dirs, filepath.Join(parent, name))
			}
		}
		_ = g.Close()
	}
}

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH
}

// Adopt returns a handle on the group name under the manager's parent that
// someone else (an OCI runtime) creates and removes: it can list, kill and
// account for the group's processes, and its Close must not be called.
func (m *Manager) Adopt(name string) *Group {
	g := &Group{v2: m.v2, dirs: []string{filepath.Join(m.pids, name)}}
	if m.memory != "" {
		g.memory = filepath.Join(m.memory, name)
	}
	if m.cpuacct != "" {
		g.cpuacct = filepath.Join(m.cpuacct, name)
	}
	return g
}
