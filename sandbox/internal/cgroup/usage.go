package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU returns the CPU time used by every process that ever ran in the
// group, grandchildren included, and whether the host accounts for it.
func (g *Group) CPU() (time.Duration, bool) {
	if g.v2 && len(g.dirs) > 0 {
		b, err := os.ReadFile(filepath.Join(g.dirs[0], "cpu.stat"))
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				return time.Duration(us) * time.Microsecond, err == nil
			}
		}
		return 0, false
	}
	if g.cpuacct == "" {
		return 0, false
	}
	ns, ok := readInt(filepath.Join(g.cpuacct, "cpuacct.usage"))
	return time.Duration(ns), ok
}

// PeakMemory returns the group's peak memory use in bytes, if known.
func (g *Group) PeakMemory() (int64, bool) {
	if g.v2 && len(g.dirs) > 0 {
		return readInt(filepath.Join(g.dirs[0], "memory.peak"))
	}
	if g.memory == "" {
		return 0, false
	}
	return readInt(filepath.Join(g.memory, "memory.max_usage_in_bytes"))
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// OOMKills returns how many of the group's processes the kernel killed at
// the group's memory limit, and whether the host tells (v2 memory.events,
// v1 memory.oom_control since Linux 4.13).
func (g *Group) OOMKills() (int64, bool) {
	var path string
	switch {
	case g.v2 && len(g.dirs) > 0:
		path = filepath.Join(g.dirs[0], "memory.events")
	case g.memory != "":
		path = filepath.Join(g.memory, "memory.oom_control")
	default:
		return 0, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
