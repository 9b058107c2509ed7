package process

import (
	"context"
	"fmt"
	"sync"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/internal/cgroup"
	"github.com/writhq/writ/sandbox/internal/command"
	"github.com/writhq/writ/sandbox/internal/interp"
	"github.com/writhq/writ/sandbox/internal/proc"
	"github.com/writhq/writ/sandbox/internal/workspace"
)

// Driver runs tools as contained host processes.
type Driver struct {
	cfg    Config
	detect *interp.Detector
	cg     *cgroup.Manager // nil when cgroups are off or missing
	proxy  *egress.Proxy
	filter []byte // the seccomp program (Linux), nil where there is none

	probeOnce sync.Once
	probeErr  error
}

var _ sandbox.Conversing = (*Driver)(nil)

// New returns a process-tier Driver. It prepares the cgroup parent and
// removes groups left by a crashed agent.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proxy, err := egress.New(cfg.Egress)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, detect: interp.NewDetector(cfg.InterpreterDirs), proxy: proxy}
	d.filter = filterProgram()
	if cfg.CgroupParent != "" {
		m, err := cgroup.Detect(cfg.CgroupParent)
		if err != nil && cfg.RequireCgroup {
			d.probeErr = fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
		}
		if m != nil {
			m.CleanStale()
			d.cg = m
		}
	}
	return d, nil
}

// Name returns "process".
func (d *Driver) Name() string { return sandbox.TierProcess }

// Available runs /bin/true once the way tools are run (Landlock included)
// and reports what failed, if anything.
func (d *Driver) Available() error {
	d.probeOnce.Do(func() {
		if d.probeErr != nil {
			return
		}
		if err := d.confinementAvailable(); err != nil {
			d.probeErr = err
			return
		}
		spec := proc.Spec{Tier: sandbox.TierProcess, Path: "/bin/true", Args: []string{"true"}, Dir: "/",
			Limits: sandbox.DefaultLimits(), Rlimits: true, UnshareNet: d.cfg.UnshareNetwork,
			AddressSpace: sandbox.DefaultLimits().MemoryBytes + d.cfg.AddressSpaceSlack, Credential: d.runAs()}
		d.isolate(&spec)
		out, err := d.probe(spec)
		if err == nil && out.Status != sandbox.StatusOK {
			err = fmt.Errorf("probe ended %s (%s)", out.Status, out.Reason)
		}
		if err != nil {
			d.probeErr = fmt.Errorf("%w: process tier cannot start a contained process: %v", sandbox.ErrUnavailable, err)
		}
	})
	return d.probeErr
}

// MemoryCgroup reports whether invocations get a memory cgroup that
// enforces limits.memory_bytes (else RLIMIT_AS alone bounds memory).
func (d *Driver) MemoryCgroup() bool { return d.cg != nil && d.cg.Memory() }

// CgroupVersion is 1 or 2 when invocations get their own cgroup, 0 when not.
func (d *Driver) CgroupVersion() int {
	if d.cg == nil {
		return 0
	}
	return d.cg.Version()
}

// Run implements sandbox.Driver.
func (d *Driver) Run(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	return d.run(ctx, inv, nil)
}

// RunTalk implements sandbox.Conversing.
func (d *Driver) RunTalk(ctx context.Context, inv sandbox.Invocation, talk sandbox.Talk) (sandbox.Outcome, error) {
	if talk == nil {
		return sandbox.Refuse(d.Name(), fmt.Errorf("RunTalk without a conversation"))
	}
	return d.run(ctx, inv, talk)
}

// run is Run, talking to the tool when talk is set.
func (d *Driver) run(ctx context.Context, inv sandbox.Invocation, talk sandbox.Talk) (sandbox.Outcome, error) {
	tier := d.Name()
	m, err := sandbox.Preflight(d, inv)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	cmd, err := command.Prepare(m, inv.Params, d.detect)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer cmd.Exe.Close()

	spec := proc.Spec{Tier: tier, Exe: cmd.Exe, Args: cmd.Argv, Env: command.Environ(m, inv.Env),
		Dir: inv.Workspace, Stdin: cmd.Stdin, Limits: m.Limits, Rlimits: true, UnshareNet: d.cfg.UnshareNetwork,
		AddressSpace: m.Limits.MemoryBytes + d.cfg.AddressSpaceSlack, Talk: talk}
	// A root agent's tool has a mount namespace of its own (its pid
	// namespace's): its workspace is a tmpfs mounted there only.
	var bound bounded
	if cred := d.runAs(); cred != nil && m.Limits.DiskBytes > 0 {
		priv, err := workspace.NewPrivate(inv.Workspace, m.Limits.DiskBytes, int(cred.Uid), int(cred.Gid))
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer priv.Close()
		bound, spec.DirMount = priv, priv.MountFD()
	} else {
		quota, err := workspace.Limit(inv.Workspace, m.Limits.DiskBytes)
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer quota.Close()
		bound = quota
	}
	ctx, filled := bound.Watch(ctx)
	defer filled()
	if cred := d.runAs(); cred != nil {
		ws, err := handOver(inv.Workspace, cred)
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer ws.Close()
		spec.Credential, spec.Dir = cred, startIn(ws)
	}
	done, err := d.confine(&spec, m, cmd.RealPath, inv.Workspace)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	out, err := proc.RunLimited(ctx, spec, d.cg)
	out.ExecDigest = cmd.Digest
	out.Egress = done()
	full, herr := bound.HandBack(filled)
	out = sandbox.DiskLimited(out, full, m.Limits.DiskBytes)
	if herr != nil && err == nil {
		err = fmt.Errorf("%s: %w", tier, herr)
	}
	if rerr := workspace.Reclaim(inv.Workspace); rerr != nil && err == nil {
		err = fmt.Errorf("%s: %w", tier, rerr)
	}
	return out, err
}

// bounded is what bounds the workspace's size for one run: a tmpfs mounted
// in the tool's mount namespace only (workspace.Private), or on the
// workspace's path (workspace.Quota: a no-op for an agent that is not root).
type bounded interface {
	Watch(ctx context.Context) (context.Context, func() bool)
	HandBack(stop func() bool) (full bool, err error)
}
