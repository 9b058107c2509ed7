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
	// map to the ids bwrap runs as on the host: RunAsUID and RunAsGID when
	// the agent is root, else the agent's own.
	UID, GID int
	// RunAsUID and RunAsGID are the host user and group bwrap, and so the
	// tool, runs as when the agent is root, with no supplementary groups
	// (agent config process_run_as, as in the process tier). Neither may
	// be 0: files a tool leaves belong to this user, and root-only files
	// inside its read_only grants are unreadable to it. bwrap then needs
	// unprivileged user namespaces and must not be setuid.
	RunAsUID, RunAsGID int
	// StageDir is where a root agent shows each run's workspace to bwrap:
	// StageDir/ws, bound in a private mount namespace of that run alone
	// (nothing is mounted on the host). Every directory above it must be
	// searchable by RunAsUID; it is made (0755, root) when missing. The
	// default, /run/writ-agent/bwrap, is in the agent unit's
	// RuntimeDirectory (writable under ProtectSystem=strict).
	StageDir string
	// WorkspaceDir is where the workspace appears inside the sandbox.
	WorkspaceDir string
	// AddressSpaceSlack as in the process tier.
	AddressSpaceSlack int64
	// InterpreterDirs as in the process tier.
	InterpreterDirs []string
	// Egress configures the proxy of tools with a network allowlist.
	Egress egress.Config
}

// DefaultConfig runs "bwrap" from PATH as nobody (65534) when the agent is
// root, tools as nobody in /workspace.
func DefaultConfig() Config {
	return Config{Binary: "bwrap", CgroupParent: "writ", UID: 65534, GID: 65534, RunAsUID: 65534, RunAsGID: 65534,
		StageDir:     "/run/writ-agent/bwrap",
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
	case !filepath.IsAbs(c.StageDir) || filepath.Clean(c.StageDir) != c.StageDir || c.StageDir == "/":
		return fmt.Errorf("bwrap: StageDir %q must be a clean absolute path other than /", c.StageDir)
	case c.UID < 0 || c.GID < 0:
		return errors.New("bwrap: negative UID or GID")
	case c.RunAsUID <= 0 || c.RunAsGID <= 0 || int64(c.RunAsUID) >= 1<<32-1 || int64(c.RunAsGID) >= 1<<32-1:
		return fmt.Errorf("bwrap: RunAsUID %d and RunAsGID %d must be ids other than root (1 to 4294967294)", c.RunAsUID, c.RunAsGID)
	case c.AddressSpaceSlack < 0:
		return errors.New("bwrap: negative AddressSpaceSlack")
	}
	return c.Egress.Validate()
}
