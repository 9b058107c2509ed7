package gvisor

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

// probe returns the platform to use: cfg.Platform if a container runs with
// it, or else the first of Platforms that runs one. The probe container is
// /bin/true (or wherever true is) on the host's root, read-only, without
// network or cgroups: it shows that runsc and the platform work here, not
// anything about the tool's bundle.
func probe(bin, state string, cfg Config) (string, error) {
	candidates := Platforms
	if cfg.Platform != "" {
		candidates = []string{cfg.Platform}
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return "", fmt.Errorf("gvisor probe: %v", err)
	}
	var errs []string
	for _, p := range candidates {
		err := probeOne(bin, state, p, truePath, cfg)
		if err == nil {
			return p, nil
		}
		errs = append(errs, fmt.Sprintf("platform %s: %v", p, err))
	}
	return "", fmt.Errorf("runsc runs no container on this host: %s", strings.Join(errs, "; "))
}

func probeOne(bin, state, platform, truePath string, cfg Config) error {
	dir, err := os.MkdirTemp(filepath.Join(cfg.OCI.StateDir, "bundles"), "probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := &specs.Spec{
		Version: "1.0.2",
		Process: &specs.Process{User: specs.User{UID: 65534, GID: 65534}, Args: []string{truePath}, Cwd: "/",
			Capabilities: &specs.LinuxCapabilities{}, NoNewPrivileges: true},
		Root: &specs.Root{Path: "/", Readonly: true},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "size=1m"}},
		},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace},
			{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace}}},
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600); err != nil {
		return err
	}
	// The probe's id cannot be taken for a stale tool container
	// ("writ-<pid>-<n>"), and is unique within this process.
	id := fmt.Sprintf("writprobe-%d-%d", os.Getpid(), probeSeq.Add(1))
	global := []string{"--root", state, "--platform=" + platform, "--network=none", "--ignore-cgroups"}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(global, "run", "--bundle", dir, id)...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer in %v", cfg.ProbeTimeout)
	}
	// A probe that hung leaves its sandbox behind.
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
