package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/internal/cgroup"
	"github.com/writhq/writ/sandbox/internal/command"
	"github.com/writhq/writ/sandbox/internal/interp"
	"github.com/writhq/writ/sandbox/internal/proc"
	"github.com/writhq/writ/sandbox/internal/seccomp"
	"github.com/writhq/writ/sandbox/internal/workspace"
)

// Driver runs tools under bubblewrap.
type Driver struct {
	cfg    Config
	bin    string // resolved bwrap path, "" when missing
	detect *interp.Detector
	cg     *cgroup.Manager
	proxy  *egress.Proxy
	filter []byte // the seccomp program, nil when this architecture has none

	probeOnce sync.Once
	probeErr  error
	version   string
}

var _ sandbox.Conversing = (*Driver)(nil)

// New returns a bwrap-tier Driver. A missing bwrap binary does not fail New:
// Available reports it and Run refuses.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proxy, err := egress.New(cfg.Egress)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, detect: interp.NewDetector(cfg.InterpreterDirs), proxy: proxy}
	if prog, err := seccomp.Program(); err == nil {
		d.filter = seccomp.Encode(prog)
	}
	if p, err := exec.LookPath(cfg.Binary); err == nil {
		d.bin, _ = filepath.Abs(p)
	}
	if cfg.CgroupParent != "" {
		if m, err := cgroup.Detect(cfg.CgroupParent); err == nil {
			m.CleanStale()
			d.cg = m
		}
	}
	return d, nil
}

// MemoryCgroup reports whether invocations get a memory cgroup that
// enforces limits.memory_bytes (else RLIMIT_AS alone bounds memory).
func (d *Driver) MemoryCgroup() bool { return d.cg != nil && d.cg.Memory() }

// Name returns "bwrap".
func (d *Driver) Name() string { return sandbox.TierBwrap }

// Version is what "bwrap --version" printed, once Available succeeded.
func (d *Driver) Version() string { _ = d.Available(); return d.version }

// Available checks that bwrap exists and can create the namespaces tools
// get, by running /bin/true with them once.
func (d *Driver) Available() error {
	d.probeOnce.Do(func() {
		if d.bin == "" {
			d.probeErr = fmt.Errorf("%w: bwrap binary %q not found (Debian: apt-get install bubblewrap)",
				sandbox.ErrUnavailable, d.cfg.Binary)
			return
		}
		if d.filter == nil {
			d.probeErr = fmt.Errorf("%w: %v", sandbox.ErrUnavailable, seccomp.ErrUnsupported)
			return
		}
		out, err := exec.Command(d.bin, "--version").Output()
		if err != nil {
			d.probeErr = fmt.Errorf("%w: %s --version: %v", sandbox.ErrUnavailable, d.bin, err)
			return
		}
		d.version = strings.TrimSpace(string(out))
		if fi, err := os.Stat(d.bin); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			// A setuid bwrap running as the run-as user would still act
			// with root's privileges on the host.
			d.probeErr = fmt.Errorf("%w: %s is setuid or setgid; the bwrap tier runs an unprivileged bwrap "+
				"(Debian's bubblewrap package, with unprivileged user namespaces)", sandbox.ErrUnavailable, d.bin)
			return
		}
		args := append(Namespaces(d.cfg.UID, d.cfg.GID), "--ro-bind", "/", "/", "/bin/true")
		// A probe killed by a signal says nothing of the host (one was
		// seen killed while the agent's tests loaded the machine, cause
		// unknown): it is tried again, three times at most; a probe that
		// exits with an error is not.
		for try := 1; ; try++ {
			probe := exec.Command(d.bin, args...)
			probe.SysProcAttr = &syscall.SysProcAttr{Credential: d.runAs()}
			b, err := probe.CombinedOutput()
			if err == nil {
				return
			}
			var exit *exec.ExitError
			if try < 3 && errors.As(err, &exit) && exit.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
				continue
			}
			d.probeErr = fmt.Errorf("%w: bwrap cannot create the sandbox namespaces: %v: %s",
				sandbox.ErrUnavailable, err, strings.TrimSpace(string(b)))
			return
		}
	})
	return d.probeErr
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
	for _, p := range append(slices.Clone(m.ReadOnly), m.Command.Path) {
		if p == "/" || overlaps(p, d.cfg.WorkspaceDir) || overlaps(p, "/proc") || overlaps(p, "/dev") {
			return sandbox.Refuse(tier, fmt.Errorf("path %q overlaps a sandbox mount", p))
		}
	}
	cmd, err := command.Prepare(m, inv.Params, d.detect)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer cmd.Exe.Close()

	filter, err := memfile("writ-seccomp", d.filter)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer filter.Close()
	cred := d.runAs()
	// The workspace's tmpfs: a root agent makes one mounted nowhere on the
	// host and shows it to bwrap at its stage in the run's private mount
	// namespace (workspace.Private); bwrap mounts one for any other agent,
	// in the sandbox's mount namespace (workspace.Mirror). Either way the
	// agent copies the workspace in and out of it.
	var (
		bound  bounded
		mirror *workspace.Mirror
		priv   *workspace.Private
	)
	switch {
	case cred == nil && m.Limits.DiskBytes > 0:
		mirror = workspace.NewMirror(inv.Workspace, m.Limits.DiskBytes)
		defer mirror.Close()
		bound = mirror
	case cred != nil && m.Limits.DiskBytes > 0:
		// Mounted in the run's private mount namespace only, where it is
		// shown to bwrap at its stage.
		priv, err = workspace.NewPrivate(inv.Workspace, m.Limits.DiskBytes, int(cred.Uid), int(cred.Gid))
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer priv.Close()
		bound = priv
	default:
		quota, err := workspace.Limit(inv.Workspace, m.Limits.DiskBytes)
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer quota.Close()
		bound = quota
	}
	ctx, filled := bound.Watch(ctx)
	defer filled()
	var (
		ws     *os.File
		staged string
	)
	switch {
	case priv != nil:
		staged, err = d.stage()
	case cred != nil:
		ws, err = workspace.HandOver(inv.Workspace, cred.Uid, cred.Gid)
		if err == nil {
			staged, err = d.stage()
		}
	case mirror == nil:
		ws, err = workspace.Open(inv.Workspace)
	}
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer ws.Close()
	j, err := newJoin()
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer j.Close()
	if mirror != nil {
		j.fill = func(proc *os.File, mntns uint64) error { return mirror.Fill(proc, mntns, d.cfg.WorkspaceDir) }
	}
	// In the order of the descriptors in args.go; a nil one is closed.
	files := []*os.File{cmd.Exe, filter, ws, nil, j.infoW, j.blockR}
	var binds []proc.Bind
	if staged != "" || mirror != nil {
		files[2] = nil
	}
	if staged != "" {
		// bwrap does not get the descriptor: a directory of the host
		// left open in the sandbox would lead out of it.
		binds = []proc.Bind{{Source: ws, Target: staged}}
		if priv != nil {
			binds = []proc.Bind{{Source: priv.MountFD(), Target: staged, Detached: true}}
		}
	}
	env := command.Environ(m, inv.Env)
	var netns *os.File
	var s *egress.Session
	if len(m.Network) > 0 {
		s, err = d.proxy.Start(m.Network)
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer s.Close()
		hosts, err := memfile("writ-hosts", s.Hosts())
		if err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer hosts.Close()
		files[3], env, netns = hosts, append(env, s.Env()...), s.Namespace()
	}

	args := d.args(m, cmd.Argv, env, netns != nil, staged, mirror != nil)
	spec := proc.Spec{Tier: tier, Path: d.bin, Args: args, Env: []string{}, Dir: "/",
		Stdin: cmd.Stdin, ExtraFiles: files, Limits: m.Limits, Rlimits: true, SignalExit: true,
		// The tool gets its session from bwrap (--new-session).
		KeepSession:  true,
		Supervisor:   true,
		AddressSpace: m.Limits.MemoryBytes + d.cfg.AddressSpaceSlack, NetNS: netns, Credential: cred,
		Binds: binds, Talk: talk, Join: j.join}
	out, err := proc.RunLimited(ctx, spec, d.cg)
	if j.fillErr != nil {
		// The sandbox was killed while held: nothing of the tool ran.
		return sandbox.Refuse(tier, j.fillErr)
	}
	out.ExecDigest = cmd.Digest
	if s != nil {
		s.Close()
		out.Egress = s.Audit()
	}
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

// bounded is what bounds the workspace's size for one run: a tmpfs the
// agent mounts (workspace.Quota) or one bwrap mounts (workspace.Mirror).
type bounded interface {
	Watch(ctx context.Context) (context.Context, func() bool)
	HandBack(stop func() bool) (full bool, err error)
}

// stage makes StageDir/ws, the mount point of every run's workspace, and
// returns it.
func (d *Driver) stage() (string, error) {
	p := filepath.Join(d.cfg.StageDir, "ws")
	if err := os.MkdirAll(p, 0o755); err != nil {
		return "", fmt.Errorf("bwrap: stage: %w", err)
	}
	// 0755 whatever the umask (the agent's unit sets 0077): the run-as
	// user must walk it.
	for _, dir := range []string{d.cfg.StageDir, p} {
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", fmt.Errorf("bwrap: stage: %w", err)
		}
	}
	return p, nil
}

// runAs is the credential bwrap starts with: RunAsUID and RunAsGID with no
// supplementary groups when the agent is root, nil (the agent's own user)
// otherwise.
func (d *Driver) runAs() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: uint32(d.cfg.RunAsUID), Gid: uint32(d.cfg.RunAsGID), Groups: []uint32{}}
}
