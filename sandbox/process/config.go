// Package process is the process sandbox tier: a tool runs as a host
// process with resource limits (rlimits and, where the host has it, a pids
// and memory cgroup), its own session and process group, a scrubbed
// environment, its workspace as working directory, filesystem access
// confined by Landlock to the workspace (read-write) and a few read-only
// system paths, and an empty network namespace — or, with a network
// allowlist, one whose only way out is the egress proxy.
package process

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/writhq/writ/sandbox/egress"
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
	// (usually: not root). Turning it off gives tools without a network
	// allowlist the host's network (Landlock still denies them TCP).
	UnshareNetwork bool
	// ConfineFilesystem confines every tool with Landlock: read and execute
	// in SystemPaths, the manifest's read_only paths and the command; read
	// and write in the workspace; nothing else. When the kernel has no
	// Landlock the tier is unavailable (fail closed). Turning it off gives
	// tools the filesystem of the agent's user, and Confinement says so.
	ConfineFilesystem bool
	// SystemPaths are readable and executable by every tool (libraries,
	// /proc). /etc is not among them: grant what a tool needs of it
	// (/etc/ssl) in its manifest's read_only.
	SystemPaths []string
	// Devices are the device files every tool may read and write.
	Devices []string
	// ReadWrite are host directories every tool may read and write besides
	// its workspace: the node owner's grant (agent config
	// process_read_write), empty by default.
	ReadWrite []string
	// RunAsUID and RunAsGID are the user and group tools run as when the
	// agent runs as root (Linux), with no supplementary groups: a tool then
	// has none of root's file access, even to files inside its Landlock
	// grants. Default 65534 and 65534 (nobody and nogroup on Debian).
	// Neither may be 0. An agent that is not root cannot switch users: its
	// tools run as itself.
	RunAsUID, RunAsGID int
	// AddressSpaceSlack is added to limits.memory_bytes to make the
	// RLIMIT_AS of a tool. Runtimes reserve far more address space than they
	// use (a Go program needs about 730 MiB before its first allocation, and
	// Go 1.26 on amd64 cannot start at all with a limit between about 1.09
	// and 1.2 GiB), so the address-space limit alone cannot be the memory
	// limit; where the host has a memory cgroup, that enforces memory_bytes
	// exactly. The default, 2 GiB, keeps every limit clear of those.
	AddressSpaceSlack int64
	// InterpreterDirs are scanned for interpreters to recognise by content;
	// nil means the usual system directories.
	InterpreterDirs []string
	// Egress configures the proxy of tools with a network allowlist.
	Egress egress.Config
}

// DefaultConfig returns the configuration an agent uses unless told
// otherwise.
func DefaultConfig() Config {
	return Config{CgroupParent: "writ", UnshareNetwork: true, ConfineFilesystem: true, RunAsUID: 65534, RunAsGID: 65534,
		SystemPaths:       []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/proc"},
		Devices:           []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"},
		AddressSpaceSlack: 2 << 30, Egress: egress.DefaultConfig()}
}

// Validate checks c.
func (c Config) Validate() error {
	if strings.ContainsAny(c.CgroupParent, "\x00") || strings.Contains(c.CgroupParent, "..") ||
		strings.HasPrefix(c.CgroupParent, "/") {
		return fmt.Errorf("process: CgroupParent %q must be a relative path with no \"..\" in it", c.CgroupParent)
	}
	if c.RunAsUID <= 0 || c.RunAsGID <= 0 || int64(c.RunAsUID) >= 1<<32-1 || int64(c.RunAsGID) >= 1<<32-1 {
		return fmt.Errorf("process: RunAsUID %d and RunAsGID %d must be ids other than root (1 to 4294967294)", c.RunAsUID, c.RunAsGID)
	}
	if c.AddressSpaceSlack < 0 {
		return errors.New("process: negative AddressSpaceSlack")
	}
	if c.RequireCgroup && c.CgroupParent == "" {
		return errors.New("process: RequireCgroup needs CgroupParent")
	}
	for _, p := range append(append([]string{}, c.SystemPaths...), c.Devices...) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return fmt.Errorf("process: system path %q must be a clean absolute path other than /", p)
		}
	}
	return c.Egress.Validate()
}
