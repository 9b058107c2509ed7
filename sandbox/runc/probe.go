package runc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/writhq/writ/internal/jsonx"
)

var probeSeq atomic.Int64

// ProbeContainer runs one container with the OCI runtime bin and its global
// flags (--root included) and reports whether it exited 0 within timeout:
// true (wherever PATH finds it) on the host's root, read-only, as cfg.UID,
// with the tier's namespaces, no network, and a cgroup under
// cfg.CgroupParent with a pids limit (1024). It shows that the runtime works on
// this host and its cgroup layout, nothing about a tool. (runc and crun
// cannot pivot into the host's own root where it is the mount namespace's
// root mount: crun is probed with probeCreate.)
func ProbeContainer(cfg Config, bin string, global []string, timeout time.Duration) error {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("probe: %v", err)
	}
	dir, id, err := writeProbe(cfg, "/", truePath)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(global, "run", "--bundle", dir, id)...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in %v", timeout)
	}
	// A probe that hung leaves its container behind.
	_ = exec.Command(bin, append(global, "delete", "--force", id)...).Run()
	return probeError(string(out), err)
}

// probeCreate creates one container with the OCI runtime bin, its global
// flags (--root included) and the bundle of ProbeContainer on the root
// filesystem rootfs, and deletes it: "create" sets the container up
// entirely (namespaces, cgroup and limits, mounts, pivot into rootfs) and
// stops before the process's exec, so the process needs nothing from
// rootfs (it is /proc/self/exe, which exists in every container). The
// runtime starts where the mount point hide is not mounted ("" for none;
// see startHidden).
func probeCreate(cfg Config, bin string, global []string, rootfs string, timeout time.Duration, hide string) error {
	dir, id, err := writeProbe(cfg, rootfs, "/proc/self/exe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// A file, not a pipe: the created container's first process holds
	// the runtime's output until it is deleted.
	out, err := os.Create(filepath.Join(dir, "output"))
	if err != nil {
		return err
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(global, "create", "--bundle", dir, id)...)
	cmd.Stdout, cmd.Stderr = out, out
	err = runHidden(cmd, hide)
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in %v", timeout)
	}
	derr := runHidden(exec.Command(bin, append(global, "delete", "--force", id)...), hide)
	if err == nil && derr != nil {
		err = fmt.Errorf("delete: %v", derr)
	}
	b, _ := os.ReadFile(out.Name())
	return probeError(string(b), err)
}

// writeProbe writes a probe's bundle, running args as cfg.UID on root, in a
// new directory under cfg.StateDir, and returns it and the container id.
func writeProbe(cfg Config, root string, args ...string) (string, string, error) {
	bundles := filepath.Join(cfg.StateDir, "bundles")
	if err := os.MkdirAll(bundles, 0o700); err != nil {
		return "", "", err
	}
	dir, err := os.MkdirTemp(bundles, "probe-")
	if err != nil {
		return "", "", err
	}
	// The probe's id cannot be taken for a stale tool container
	// ("writ-<pid>-<n>"), and is unique within this process.
	id := fmt.Sprintf("writprobe-%d-%d", os.Getpid(), probeSeq.Add(1))
	pids := int64(1024) // room for a gVisor sandbox's own threads
	spec := &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{User: specs.User{UID: cfg.UID, GID: cfg.GID}, Args: args, Cwd: "/",
			Capabilities: &specs.LinuxCapabilities{}, NoNewPrivileges: true},
		Root: &specs.Root{Path: root, Readonly: true},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "size=1m"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace},
				{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace}},
			CgroupsPath: "/" + cfg.CgroupParent + "/" + id,
			Resources:   &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: pids}},
		},
	}
	raw, err := jsonx.Marshal(spec)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, id, nil
}

// probeError is a failed probe's error: the last line the runtime wrote,
// or err.
func probeError(out string, err error) error {
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(out)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	if msg != "" {
		return errors.New(msg)
	}
	return err
}
