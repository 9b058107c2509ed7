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
