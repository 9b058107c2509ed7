package runc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var probeSeq atomic.Int64

// ProbeContainer runs one container with the OCI runtime bin and its global
// flags (--root included) and reports whether it exited 0 within timeout:
// true (wherever PATH finds it) on the host's root, read-only, as cfg.UID,
// with the tier's namespaces, no network, and a cgroup under
// cfg.CgroupParent with a pids limit (1024). It shows that the runtime works on
// this host and its cgroup layout (crun refuses a hybrid v1/v2 layout
// whose unified hierarchy holds a controller), nothing about a tool.
func ProbeContainer(cfg Config, bin string, global []string, timeout time.Duration) error {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("probe: %v", err)
	}
	bundles := filepath.Join(cfg.StateDir, "bundles")
	if err := os.MkdirAll(bundles, 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(bundles, "probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The probe's id cannot be taken for a stale tool container
	// ("writ-<pid>-<n>"), and is unique within this process.
	id := fmt.Sprintf("writprobe-%d-%d", os.Getpid(), probeSeq.Add(1))
	pids := int64(1024) // room for a gVisor sandbox's own threads
	spec := &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{User: specs.User{UID: cfg.UID, GID: cfg.GID}, Args: []string{truePath}, Cwd: "/",
			Capabilities: &specs.LinuxCapabilities{}, NoNewPrivileges: true},
		Root: &specs.Root{Path: "/", Readonly: true},
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
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600); err != nil {
		return err
	}
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
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
}
