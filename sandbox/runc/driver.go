package runc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/internal/cgroup"
	"github.com/writhq/writ/sandbox/internal/command"
	"github.com/writhq/writ/sandbox/internal/interp"
	"github.com/writhq/writ/sandbox/internal/proc"
	"github.com/writhq/writ/sandbox/internal/workspace"
)

// Driver runs tools in OCI containers.
type Driver struct {
	cfg    Config
	bin    string
	detect *interp.Detector
	cg     *cgroup.Manager // to watch (kill, account) the runtime's cgroups
	proxy  *egress.Proxy
	rootfs string // RootFS, or where Image was unpacked
	flavor Flavor

	probeOnce sync.Once
	probeErr  error
	version   string
}

var _ sandbox.Conversing = (*Driver)(nil)

// New returns a runc-tier Driver and removes the containers and bundles a
// crashed agent left behind. A missing runtime or root filesystem does not
// fail New: Available reports it and Run refuses.
//
// crun is probed by running a container (it refuses the hybrid cgroup
// layout runc runs in, and is then run without the unified mount: see
// probeCrun); runc is not.
func New(cfg Config) (*Driver, error) {
	var f Flavor
	if filepath.Base(cfg.Runtime) == "crun" {
		f.view = &cgroupView{}
	}
	return NewFlavor(cfg, f)
}

func newDriver(cfg Config, f Flavor) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proxy, err := egress.New(cfg.Egress)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, detect: interp.NewDetector(cfg.InterpreterDirs), proxy: proxy, flavor: f}
	if p, err := exec.LookPath(cfg.Runtime); err == nil {
		d.bin, _ = filepath.Abs(p)
	}
	if m, err := cgroup.Detect(cfg.CgroupParent); err == nil {
		d.cg = m
	}
	return d, nil
}

// Name returns "runc" whichever runtime binary is configured (runc or
// crun), or the tier name of the driver's Flavor ("gvisor" for runsc).
func (d *Driver) Name() string { return d.flavor.tier() }

// Version is the first line of the runtime's "--version".
func (d *Driver) Version() string { _ = d.Available(); return d.version }

// Available checks the runtime binary, the root filesystem and the state
// directory.
func (d *Driver) Available() error {
	d.probeOnce.Do(func() {
		fail := func(format string, a ...any) {
			d.probeErr = fmt.Errorf("%w: %s", sandbox.ErrUnavailable, fmt.Sprintf(format, a...))
		}
		if d.bin == "" {
			install := d.flavor.Install
			if install == "" {
				install = "Debian: apt-get install runc, or crun"
			}
			fail("OCI runtime %q not found (%s)", d.cfg.Runtime, install)
			return
		}
		out, err := exec.Command(d.bin, "--version").Output()
		if err != nil {
			fail("%s --version: %v", d.bin, err)
			return
		}
		d.version, _, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
		for _, dir := range []string{"state", "bundles", "exe", "images"} {
			if err := os.MkdirAll(filepath.Join(d.cfg.StateDir, dir), 0o700); err != nil {
				fail("state directory: %v", err)
				return
			}
		}
		d.rootfs = d.cfg.RootFS
		if d.cfg.Image != "" {
			if d.rootfs, err = d.unpack(); err != nil {
				fail("image %s: %v", d.cfg.Image, err)
				return
			}
		}
		if st, err := os.Stat(d.rootfs); err != nil || !st.IsDir() {
			fail("root filesystem %q is not a directory", d.rootfs)
			return
		}
		probe := d.flavor.Probe
		if d.flavor.view != nil {
			probe = d.probeCrun
		}
		if probe != nil {
			note, err := probe(d.bin, d.StateDir())
			if err != nil {
				fail("%v", err)
				return
			}
			if note != "" {
				d.version += " (" + note + ")"
			}
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
	// limits.disk_bytes: the workspace is a tmpfs of that size.
	quota, err := workspace.Limit(inv.Workspace, m.Limits.DiskBytes)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer quota.Close()
	ctx, filled := quota.Watch(ctx)
	defer filled()
	id := containerID()
	dir := filepath.Join(d.cfg.StateDir, "bundles", id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer os.RemoveAll(dir)
	var net *egress.Session
	if len(m.Network) > 0 {
		if net, err = d.proxy.Start(m.Network); err != nil {
			return sandbox.Refuse(tier, err)
		}
		defer net.Close()
	}
	stdin, digest, err := d.writeBundle(dir, id, m, inv, net)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}

	state := filepath.Join(d.cfg.StateDir, "state")
	spec := proc.Spec{Tier: tier, Path: d.bin, Env: []string{}, Dir: dir, Stdin: stdin,
		Args:   slices.Concat([]string{d.bin, "--root", state}, d.flavor.args(net != nil), []string{"run", "--bundle", dir, id}),
		Limits: m.Limits, SignalExit: true, Talk: talk,
		// The container's processes are not our children: kill them
		// through the runtime as well as through their cgroup.
		OnKill: func() { d.runtime(state, "kill", id, "KILL") },
	}
	if hide := d.hidden(); hide != "" {
		spec.Unmount = []string{hide}
	}
	if d.cg != nil {
		spec.Cgroup, spec.CgroupWatchOnly = d.cg.Adopt(id), true
	}
	var watch *cpuWatch
	if d.flavor.WatchCPU && spec.Cgroup != nil {
		watch = startCPUWatch(spec.Cgroup, time.Duration(m.Limits.CPUSeconds)*time.Second, spec.OnKill)
	}
	out, err := proc.Run(ctx, spec)
	if watch != nil {
		watch.finish(&out)
	}
	// "runc run" removes a container that ended by itself; one whose
	// runtime was killed (timeout, cancellation) is left to delete. runsc
	// keeps "<id>_sandbox:<id>.state" and a lock instead of a directory.
	left, _ := filepath.Glob(filepath.Join(state, id+"_sandbox:*"))
	if _, serr := os.Stat(filepath.Join(state, id)); serr == nil || len(left) > 0 {
		d.runtime(state, "delete", "--force", id)
		removeLeftovers(state, d.cfg.CgroupParent, id)
	}
	out.ExecDigest = digest
	if net != nil {
		net.Close()
		out.Egress = net.Audit()
	}
	full, herr := quota.HandBack(filled)
	out = sandbox.DiskLimited(out, full, m.Limits.DiskBytes)
	if herr != nil && err == nil {
		err = herr
	}
	// The tool runs as RunAs (65534) on the host; nothing it set setuid or
	// setgid in the workspace keeps the bit.
	if rerr := workspace.Reclaim(inv.Workspace); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return out, fmt.Errorf("%s: %w", tier, err)
	}
	return out, nil
}

// WriteBundle writes into dir (which must exist) the OCI bundle Run would
// use for inv, with the cgroup named id, after the same checks: an
// operator can inspect it, or run it with the runtime by hand.
func (d *Driver) WriteBundle(dir, id string, inv sandbox.Invocation) error {
	m := inv.Manifest.WithDefaults()
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Tier != d.Name() {
		return fmt.Errorf("%w: manifest is for the %s tier", sandbox.ErrInvalidManifest, m.Tier)
	}
	if err := d.Available(); err != nil {
		return err
	}
	if len(m.Network) > 0 {
		return fmt.Errorf("a bundle with a network allowlist needs the egress proxy of a run")
	}
	_, _, err := d.writeBundle(dir, id, m, inv, nil)
	return err
}

// writeBundle checks the command, stashes its executable and writes
// config.json; it returns what the tool reads on stdin and the digest of
// the executable.
func (d *Driver) writeBundle(dir, id string, m sandbox.Manifest, inv sandbox.Invocation, net *egress.Session) ([]byte, string, error) {
	for _, p := range append([]string{m.Command.Path}, m.ReadOnly...) {
		if p == "/" || under(p, d.cfg.WorkspaceDir) || under(p, "/proc") || under(p, "/dev") {
			return nil, "", fmt.Errorf("path %q overlaps a container mount", p)
		}
	}
	cmd, err := command.Prepare(m, inv.Params, d.detect)
	if err != nil {
		return nil, "", err
	}
	exe, err := d.stash(cmd.Exe)
	cmd.Exe.Close()
	if err != nil {
		return nil, "", err
	}
	b := bundle{argv: cmd.Argv, env: command.Environ(m, inv.Env), exe: exe, workspace: inv.Workspace,
		cgroup: "/" + d.cfg.CgroupParent + "/" + id}
	if net != nil {
		// runc joins the namespace through the agent's open descriptor.
		b.netns = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), net.Namespace().Fd())
		b.hosts = filepath.Join(dir, "hosts")
		if err := os.WriteFile(b.hosts, net.Hosts(), 0o644); err != nil {
			return nil, "", err
		}
		b.env = append(b.env, net.Env()...)
	}
	spec := d.spec(m, b)
	if d.flavor.Spec != nil {
		d.flavor.Spec(spec)
	}
	raw, err := jsonx.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, "", err
	}
	return cmd.Stdin, cmd.Digest, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600)
}

// StateDir is the runtime's --root, for running a bundle by hand.
func (d *Driver) StateDir() string { return filepath.Join(d.cfg.StateDir, "state") }

// Runtime is the resolved path of the OCI runtime binary ("" if missing).
func (d *Driver) Runtime() string { return d.bin }

// runtime runs one management command of the OCI runtime, best effort.
func (d *Driver) runtime(state string, args ...string) {
	_ = runHidden(exec.Command(d.bin, slices.Concat([]string{"--root", state}, d.flavor.args(false), args)...), d.hidden())
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
