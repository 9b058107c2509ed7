// Package gvisor is the gVisor sandbox tier: runsc runs the runc tier's
// OCI bundle (read-only root, the checked executable, a writable
// workspace, no capabilities, the same seccomp profile and cgroup limits),
// and the tool's system calls are served by gVisor's user-space kernel
// instead of the host's. A tool without network gets runsc's
// --network=none (loopback inside the sandbox only); a tool with an
// allowlist gets --network=host inside the egress proxy's network
// namespace, where the only reachable sockets are the proxy's.
package gvisor

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/writhq/writ/sandbox/runc"
)

// The platforms runsc can intercept system calls with. Which work depends
// on the runsc version, the kernel and the machine (kvm needs /dev/kvm and
// working virtualisation).
const (
	PlatformSystrap = "systrap"
	PlatformPtrace  = "ptrace"
	PlatformKVM     = "kvm"
)

// Platforms is the order a Config without Platform tries them in: systrap
// (fastest, runsc from 2023 on), ptrace (works wherever ptrace does), kvm.
var Platforms = []string{PlatformSystrap, PlatformPtrace, PlatformKVM}

// Config configures the gvisor tier.
type Config struct {
	// OCI is the bundle and state configuration the tier shares with the
	// runc tier; OCI.Runtime is the runsc binary.
	OCI runc.Config
	// Platform is runsc's --platform. Empty means the first of Platforms
	// that runs a container on this host, found when the tier is probed.
	Platform string
	// ProbeTimeout bounds one probe container (a platform that hangs on
	// this machine is given up after it).
	ProbeTimeout time.Duration
}

// DefaultConfig uses runsc from PATH, state under /run/writ/gvisor, and the
// platform found by probing.
func DefaultConfig() Config {
	oci := runc.DefaultConfig()
	oci.Runtime = "runsc"
	oci.StateDir = "/run/writ/gvisor"
	oci.CgroupParent = "writ-gvisor"
	return Config{OCI: oci, ProbeTimeout: 15 * time.Second}
}

// Validate checks c.
func (c Config) Validate() error {
	if c.Platform != "" && !slices.Contains(Platforms, c.Platform) {
		return fmt.Errorf("gvisor: Platform %q: want one of %v, or empty to probe", c.Platform, Platforms)
	}
	if c.ProbeTimeout <= 0 {
		return errors.New("gvisor: ProbeTimeout must be positive")
	}
	if err := c.OCI.Validate(); err != nil {
		return fmt.Errorf("gvisor: %w", err)
	}
	return nil
}
