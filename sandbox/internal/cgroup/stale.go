package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
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
// exist (an agent that crashed mid-run). It leaves other live agents' groups
// alone.
func (m *Manager) CleanStale() {
	entries, err := os.ReadDir(m.pids)
	if err != nil {
		return
	}
	for _, e := range entries {
		owner, _, ok := strings.Cut(e.Name(), "-")
		pid, err := strconv.Atoi(owner)
		if !e.IsDir() || !ok || err != nil || alive(pid) {
			continue
		}
		g := &Group{v2: m.v2, dirs: []string{filepath.Join(m.pids, e.Name())}}
		if m.memory != "" {
			if _, err := os.Stat(filepath.Join(m.memory, e.Name())); err == nil {
				g.dirs = append(g.dirs, filepath.Join(m.memory, e.Name()))
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
