// Package process is the process sandbox tier: a tool runs as a plain host
// process with resource limits (rlimits and, where the host has it, a pids
// and memory cgroup), its own session and process group, a scrubbed
// environment, its workspace as working directory and, by default, an empty
// network namespace. It does not isolate the filesystem on Linux: use the
// bwrap or runc tier for that.
package process

import (
	"errors"
	"fmt"
	"strings"
)

// Config configures the process tier.
type Config struct {
	// CgroupParent names the cgroup under which each invocation gets its
	// own group ("writ" gives /sys/fs/cgroup/pids/writ/<id> on v1). Empty
	// disables cgroups.
	CgroupParent string
	// RequireCgroup makes the tier unavailable when no writable pids cgroup
	// exists, instead of running with rlimits and process groups only.
	RequireCgroup bool
	// UnshareNetwork starts every tool in a new network namespace with no
	// interface up. The tier is unavailable when the host refuses that
	// (usually: not root). Turning it off gives tools the host's network.
	UnshareNetwork bool
	// AddressSpaceSlack is added to limits.memory_bytes to make the
	// RLIMIT_AS of a tool. Runtimes reserve far more address space than they
	// use (a Go program needs about 700 MiB before its first allocation), so
	// the address-space limit alone cannot be the memory limit; where the
	// host has a memory cgroup, that enforces memory_bytes exactly.
	AddressSpaceSlack int64
	// InterpreterDirs are scanned for interpreters to recognise by content;
	// nil means the usual system directories.
	InterpreterDirs []string
}

// DefaultConfig returns the configuration an agent uses unless told
// otherwise.
func DefaultConfig() Config {
	return Config{CgroupParent: "writ", UnshareNetwork: true, AddressSpaceSlack: 1 << 30}
}

// Validate checks c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.CgroupParent, "\x00") || strings.Contains(c.CgroupParent, "..") ||
		strings.HasPrefix(c.CgroupParent, "/") {
		return fmt.Errorf("process: CgroupParent %q must be a relative path with no \"..\" in it", c.CgroupParent)
	}
	if c.AddressSpaceSlack < 0 {
		return errors.New("process: negative AddressSpaceSlack")
	}
	if c.RequireCgroup && c.CgroupParent == "" {
		return errors.New("process: RequireCgroup needs CgroupParent")
	}
	return nil
}
