package process

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/landlock"
	"github.com/writhq/writ/sandbox/internal/proc"
	"github.com/writhq/writ/sandbox/internal/seccomp"
)

// filterProgram is the seccomp program of the bwrap tier, in the form a
// tool the agent holds at its exec needs (ptrace TRACEME and DETACH only).
func filterProgram() []byte {
	p, err := seccomp.ProgramTraced()
	if err != nil {
		return nil
	}
	return seccomp.Encode(p)
}

// isolate adds the seccomp filter and, for a root agent, the pid namespace
// with its own /proc to spec.
func (d *Driver) isolate(spec *proc.Spec) {
	spec.Seccomp = d.filter
	spec.PidNS = os.Geteuid() == 0
}

// confinementAvailable fails closed when there is no seccomp filter for
// this architecture, and when files are to be confined and the kernel has no Landlock.
func (d *Driver) confinementAvailable() error {
	if d.filter == nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, seccomp.ErrUnsupported)
	}
	if !d.cfg.ConfineFilesystem {
		return nil
	}
	if _, err := landlock.ABI(); err != nil {
		return fmt.Errorf("%w: the process tier confines files with Landlock, which this kernel lacks "+
			"(Linux 5.13+ with landlock in lsm=): %v; ConfineFilesystem=false runs tools unconfined", sandbox.ErrUnavailable, err)
	}
	return nil
}

// probe runs spec the way tools run, Landlock included.
func (d *Driver) probe(spec proc.Spec) (sandbox.Outcome, error) {
	spec.Landlock = d.rules(nil, spec.Path, "/tmp")
	return proc.Run(context.Background(), spec)
}

// Confinement says how the filesystem is confined: "landlock ABI n", or
// "none" when ConfineFilesystem is off.
func (d *Driver) Confinement() string {
	if !d.cfg.ConfineFilesystem {
		return "none"
	}
	v, err := landlock.ABI()
	if err != nil {
		return "unavailable"
	}
	return fmt.Sprintf("landlock ABI %d", v)
}

// rules is the Landlock domain of one tool, nil when confinement is off.
func (d *Driver) rules(readOnly []string, exe, workspace string) *landlock.Rules {
	if !d.cfg.ConfineFilesystem {
		return nil
	}
	ro := append(slices.Clone(d.cfg.SystemPaths), readOnly...)
	if os.Geteuid() != 0 {
		// No pid namespace of its own: a /proc would show every process
		// of the host. A root agent's tools get a /proc of their own.
		ro = slices.DeleteFunc(ro, func(p string) bool { return p == "/proc" || strings.HasPrefix(p, "/proc/") })
	}
	return &landlock.Rules{ReadExec: append(ro, exe), ReadWrite: append([]string{workspace}, d.cfg.ReadWrite...), Devices: d.cfg.Devices}
}

// confine adds the seccomp filter, the pid namespace, Landlock and, for a
// network allowlist, the egress proxy's namespace to spec. The returned
// function ends the proxy session and returns its audit (nil without a
// network allowlist).
func (d *Driver) confine(spec *proc.Spec, m sandbox.Manifest, exe, workspace string) (func() *sandbox.EgressAudit, error) {
	d.isolate(spec)
	spec.Landlock = d.rules(m.ReadOnly, exe, workspace)
	if len(m.Network) == 0 {
		return func() *sandbox.EgressAudit { return nil }, nil
	}
	s, err := d.proxy.Start(m.Network)
	if err != nil {
		return nil, err
	}
	spec.NetNS = s.Namespace()
	spec.Env = append(spec.Env, s.Env()...)
	if spec.Landlock != nil {
		spec.Landlock.ConnectTCP = s.Ports()
	}
	return func() *sandbox.EgressAudit { s.Close(); return s.Audit() }, nil
}
