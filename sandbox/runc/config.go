// Package runc is the OCI sandbox tier: each invocation is a container run
// by an OCI runtime binary (runc, crun, or runsc for gVisor) from a bundle
// built with the runtime-spec types: the operator's read-only root
// filesystem, the inspected executable bound read-only, a writable
// workspace, fresh /proc, /dev and /tmp, no capabilities, no new
// privileges, a seccomp profile, cgroup memory and pids limits, rlimits, and
// its own pid, mount, ipc, uts, cgroup and (empty) network namespaces.
package runc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Config configures the runc tier.
type Config struct {
	// Runtime is the OCI runtime binary: a path, or a name looked up in PATH.
	Runtime string
	// RootFS is the directory every container uses as its read-only root.
	// It must exist; the runtime may create empty mount points in it.
	RootFS string
	// StateDir holds the runtime's state (its --root), the bundles, and the
	// checked copies of tool executables. Private to the agent.
	StateDir string
	// CgroupParent is where the runtime creates each container's cgroup.
	CgroupParent string
	// UID and GID the tool runs as. The workspace must be writable by them.
	UID, GID uint32
	// WorkspaceDir is where the workspace appears in the container.
	WorkspaceDir string
	// AddressSpaceSlack as in the process tier.
	AddressSpaceSlack int64
	// InterpreterDirs as in the process tier.
	InterpreterDirs []string
}

// DefaultConfig uses runc from PATH and state under /run/writ/runc.
func DefaultConfig() Config {
	return Config{Runtime: "runc", StateDir: "/run/writ/runc", CgroupParent: "writ-runc",
		UID: 65534, GID: 65534, WorkspaceDir: "/workspace", AddressSpaceSlack: 1 << 30}
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Runtime == "":
		return errors.New("runc: Runtime is empty")
	case !filepath.IsAbs(c.RootFS):
		return fmt.Errorf("runc: RootFS %q must be an absolute path", c.RootFS)
	case !filepath.IsAbs(c.StateDir):
		return fmt.Errorf("runc: StateDir %q must be an absolute path", c.StateDir)
	case c.CgroupParent == "" || strings.Contains(c.CgroupParent, "..") || strings.HasPrefix(c.CgroupParent, "/"):
		return fmt.Errorf("runc: CgroupParent %q must be a relative path with no \"..\" in it", c.CgroupParent)
	case !filepath.IsAbs(c.WorkspaceDir) || c.WorkspaceDir == "/" || filepath.Clean(c.WorkspaceDir) != c.WorkspaceDir:
		return fmt.Errorf("runc: WorkspaceDir %q must be a clean absolute path other than /", c.WorkspaceDir)
	case c.AddressSpaceSlack < 0:
		return errors.New("runc: negative AddressSpaceSlack")
	}
	return nil
}
