// Package bwrap is the bubblewrap sandbox tier: a tool runs under the real
// bwrap binary in new user, mount, pid, ipc, uts, cgroup and network
// namespaces, with an empty read-only root holding only its executable and
// the read-only paths its manifest names, a private writable workspace,
// fresh /proc, /dev and /tmp, no capabilities, a seccomp filter, the egress
// proxy as the only way out when the manifest lists destinations, and the process tier's
// rlimits, cgroup and output handling around it.
package bwrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/writhq/writ/sandbox/egress"
)

// Config configures the bwrap tier.
type Config struct {
	// Binary is the bwrap executable, a path or a name looked up in PATH.
	Binary string
	// CgroupParent as in the process tier; empty disables cgroups.
	CgroupParent string
	// UID and GID are the ids the tool has inside its user namespace. They
	// map to the agent's own ids outside, so files it leaves in the
	// workspace belong to the agent.
	UID, GID int
	// WorkspaceDir is where the workspace appears inside the sandbox.
	WorkspaceDir string
	// AddressSpaceSlack as in the process tier.
	AddressSpaceSlack int64
	// InterpreterDirs as in the process tier.
	InterpreterDirs []string
	// Egress configures the proxy of tools with a network allowlist.
	Egress egress.Config
}

// DefaultConfig runs "bwrap" from PATH, tools as nobody in /workspace.
func DefaultConfig() Config {
	return Config{Binary: "bwrap", CgroupParent: "writ", UID: 65534, GID: 65534,
		WorkspaceDir: "/workspace", AddressSpaceSlack: 2 << 30, Egress: egress.DefaultConfig()}
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Binary == "":
		return errors.New("bwrap: Binary is empty")
	case !filepath.IsAbs(c.WorkspaceDir) || filepath.Clean(c.WorkspaceDir) != c.WorkspaceDir || c.WorkspaceDir == "/":
		return fmt.Errorf("bwrap: WorkspaceDir %q must be a clean absolute path other than /", c.WorkspaceDir)
	case strings.Contains(c.CgroupParent, "..") || strings.HasPrefix(c.CgroupParent, "/"):
		return fmt.Errorf("bwrap: CgroupParent %q must be a relative path with no \"..\" in it", c.CgroupParent)
	case c.UID < 0 || c.GID < 0:
		return errors.New("bwrap: negative UID or GID")
	case c.AddressSpaceSlack < 0:
		return errors.New("bwrap: negative AddressSpaceSlack")
	}
	return c.Egress.Validate()
}
