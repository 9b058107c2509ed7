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

	"github.com/writhq/writ/sandbox/egress"
)

// Config configures the runc tier.
type Config struct {
	// Runtime is the OCI runtime binary: a path, or a name looked up in PATH.
	Runtime string
	// RootFS is the directory every container uses as its read-only root.
	// It must exist; the runtime may create empty mount points in it.
	RootFS string
	// Image, instead of RootFS, is an OCI image layout tarball on this
	// host (what "skopeo copy ... oci-archive:" or "docker save" of an OCI
	// image writes); it is unpacked once under StateDir/images. Nothing is
	// ever pulled from a registry.
	Image string
	// ImageMaxBytes bounds the file data an image may unpack to.
	ImageMaxBytes int64
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
	// CPUs is the CPU bandwidth of one container, in cores (cgroup cpu
	// quota over a 100 ms period, v1 and v2 alike).
	CPUs float64
	// Egress configures the proxy of tools with a network allowlist.
	Egress egress.Config
}

// DefaultConfig uses runc from PATH and state under /run/writ/runc.
func DefaultConfig() Config {
	return Config{Runtime: "runc", StateDir: "/run/writ/runc", CgroupParent: "writ-runc",
		UID: 65534, GID: 65534, WorkspaceDir: "/workspace", AddressSpaceSlack: 2 << 30,
		CPUs: 1, ImageMaxBytes: 4 << 30, Egress: egress.DefaultConfig()}
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Runtime == "":
		return errors.New("runc: Runtime is empty")
	case (c.RootFS == "") == (c.Image == ""):
		return errors.New("runc: set exactly one of RootFS and Image")
	case c.RootFS != "" && !filepath.IsAbs(c.RootFS):
		return fmt.Errorf("runc: RootFS %q must be an absolute path", c.RootFS)
	case c.Image != "" && !filepath.IsAbs(c.Image):
		return fmt.Errorf("runc: Image %q must be an absolute path", c.Image)
	case c.ImageMaxBytes <= 0:
		return errors.New("runc: ImageMaxBytes must be positive")
	case !filepath.IsAbs(c.StateDir):
		return fmt.Errorf("runc: StateDir %q must be an absolute path", c.StateDir)
	case c.CgroupParent == "" || strings.Contains(c.CgroupParent, "..") || strings.HasPrefix(c.CgroupParent, "/"):
		return fmt.Errorf("runc: CgroupParent %q must be a relative path with no \"..\" in it", c.CgroupParent)
	case !filepath.IsAbs(c.WorkspaceDir) || c.WorkspaceDir == "/" || filepath.Clean(c.WorkspaceDir) != c.WorkspaceDir:
		return fmt.Errorf("runc: WorkspaceDir %q must be a clean absolute path other than /", c.WorkspaceDir)
	case c.AddressSpaceSlack < 0:
		return errors.New("runc: negative AddressSpaceSlack")
	case c.CPUs < 0.01 || c.CPUs > 1024:
		return fmt.Errorf("runc: CPUs %v must be between 0.01 and 1024", c.CPUs)
	}
	return c.Egress.Validate()
}
