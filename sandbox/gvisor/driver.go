package gvisor

import (
	"sync/atomic"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/runc"
)

// New returns the gvisor tier's Driver: the runc tier's driver with runsc
// as its runtime, named "gvisor". Like runc.New it does not fail for a
// missing runsc or root filesystem, or for no working platform: Available
// says so and Run refuses.
func New(cfg Config) (*runc.Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var platform atomic.Value // string, set by the probe
	platform.Store(cfg.Platform)
	f := runc.Flavor{
		Tier:    sandbox.TierGvisor,
		Install: "Debian: apt-get install runsc",
		// The sentry serves the tool's threads on host threads of its
		// own: RLIMIT_CPU in the bundle does not stop a spinning tool.
		WatchCPU: true,
		Spec:     adjust,
		Args: func(egress bool) []string {
			return flags(platform.Load().(string), egress)
		},
		Probe: func(bin, state string) (string, error) {
			p, err := probe(bin, state, cfg)
			if err != nil {
				return "", err
			}
			platform.Store(p)
			return "platform " + p, nil
		},
	}
	return runc.NewFlavor(cfg.OCI, f)
}

// flags are runsc's global flags for one container. --oci-seccomp applies
// the bundle's seccomp profile inside the sandbox, so that the tool meets
// the same refusals as under runc, on top of gVisor's own filter of the
// sandbox itself.
func flags(platform string, egress bool) []string {
	network := "--network=none"
	if egress {
		// The sandbox's sockets are host sockets in the egress proxy's
		// namespace (the bundle names it), whose loopback holds only the
		// proxy's listeners: gVisor's own network stack would give the tool
		// a loopback of its own, where the proxy is not.
		network = "--network=host"
	}
	return []string{"--platform=" + platform, network, "--oci-seccomp"}
}

// sentryPids is what the host pids limit of a gVisor container adds to
// limits.pids for the sandbox's own host threads and processes (the
// sentry's Go runtime, the gofer, the platform's stubs).
const sentryPids = 512

// adjust moves limits.pids inside the sandbox. Every thread of the tool
// costs the sentry a host thread as well, and the sentry cannot survive
// being refused one (a fork bomb that reaches the host pids limit crashes
// the sandbox rather than failing the tool's fork): the tool's processes
// are bounded by RLIMIT_NPROC, which gVisor enforces on its own tasks,
// and the host cgroup keeps room above it for the sandbox itself.
func adjust(s *specs.Spec) {
	r := s.Linux.Resources
	if r == nil || r.Pids == nil || r.Pids.Limit <= 0 {
		return
	}
	n := uint64(r.Pids.Limit)
	s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Soft: n, Hard: n})
	r.Pids.Limit += sentryPids
}
