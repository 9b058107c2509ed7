package nodeagent

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/tiers"
)

// maxConfigFile bounds the agent configuration file.
const maxConfigFile = 1 << 20

// MaxConcurrency bounds Config.Concurrency.
const MaxConcurrency = 1024

// DefaultMaxDiskBytes is max_disk_bytes when the configuration sets none.
const DefaultMaxDiskBytes = 1 << 30

// ErrConfig is the parent of every reason a configuration is refused.
var ErrConfig = errors.New("nodeagent: configuration")

// Config is the agent's configuration file (JSON, docs/agent.md): the
// servers it dials, where it keeps its state, where the node owner's tool
// allowlist is, and how much it runs at once.
type Config struct {
	// Servers are the control-plane servers' session addresses, host:port;
	// the agent dials any of them and fails over to the others.
	Servers []string `json:"servers"`
	// DataDir holds the node's keys, certificate and durable store (0700).
	DataDir string `json:"data_dir"`
	// ToolsDir is the node owner's allowlist: one manifest per *.json file.
	ToolsDir string `json:"tools_dir"`
	// TokenFile holds the one-time join token, read only until the node is
	// enrolled. Optional.
	TokenFile string `json:"token_file,omitzero"`
	// Labels describe the node to the scheduler (intents target labels).
	Labels map[string]string `json:"labels,omitzero"`
	// Concurrency is how many tools run at once.
	Concurrency int `json:"concurrency,omitzero"`
	// MaxDiskBytes is the largest limits.disk_bytes a tool may have here
	// (its workspace is a tmpfs of that size, in memory, during a run); a
	// dispatch of a tool above it is refused. Default DefaultMaxDiskBytes.
	MaxDiskBytes int64 `json:"max_disk_bytes,omitzero"`
	// RuncRootFS is the root filesystem of runc containers; without it the
	// runc tier is unavailable.
	RuncRootFS string `json:"runc_rootfs,omitzero"`
	// RuncRuntime is the OCI runtime of the runc tier: "runc" (default)
	// or "crun", looked up in PATH.
	RuncRuntime string `json:"runc_runtime,omitzero"`
	// GvisorPlatform is runsc's platform for the gvisor tier (which uses
	// RuncRootFS as its root filesystem too): "systrap", "ptrace" or
	// "kvm"; empty probes them in that order at start.
	GvisorPlatform string `json:"gvisor_platform,omitzero"`
	// ProcessReadWrite are host directories that process-tier tools may
	// write besides their workspace (Landlock); empty by default.
	ProcessReadWrite []string `json:"process_read_write,omitzero"`
	// ProcessRunAs is the user and group process-tier and bwrap-tier tools
	// run as on the host when the agent runs as root (Linux), with no
	// supplementary groups; default 65534 and 65534 (nobody, nogroup). Root
	// is refused.
	ProcessRunAs *RunAs `json:"process_run_as,omitzero"`
	// Env gives values to the environment variable names that manifests
	// allow; a tool gets only the names its manifest lists.
	Env map[string]string `json:"env,omitzero"`
}

// RunAs is a numeric user and group id.
type RunAs struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// DefaultConfig returns the platform's default paths, concurrency 4 and no
// servers (which Validate refuses: a node must be told where to dial).
func DefaultConfig() Config {
	c := Config{DataDir: "/var/lib/writ/agent", ToolsDir: "/etc/writ/tools", Concurrency: 4}
	if runtime.GOOS == "darwin" {
		c.DataDir, c.ToolsDir = "/usr/local/var/writ/agent", "/usr/local/etc/writ/tools"
	}
	return c
}

// DefaultConfigPath is where `writ agent install` writes the configuration.
func DefaultConfigPath() string {
	if runtime.GOOS == "darwin" {
		return "/usr/local/etc/writ/agent.json"
	}
	return "/etc/writ/agent.json"
}

// Validate reports the first setting the agent cannot run with.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: servers: at least one server address is required", ErrConfig)
	}
	for i, s := range c.Servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" || port == "" || strings.ContainsFunc(s, unicode.IsControl) {
			return fmt.Errorf("%w: servers[%d]: %q is not host:port", ErrConfig, i, s)
		}
		if slices.Index(c.Servers, s) != i {
			return fmt.Errorf("%w: servers: %q is listed twice", ErrConfig, s)
		}
	}
	for name, p := range map[string]string{"data_dir": c.DataDir, "tools_dir": c.ToolsDir} {
		if err := checkPath(name, p); err != nil {
			return err
		}
	}
	for name, p := range map[string]string{"token_file": c.TokenFile, "runc_rootfs": c.RuncRootFS} {
		if p != "" {
			if err := checkPath(name, p); err != nil {
				return err
			}
		}
	}
	switch c.RuncRuntime {
	case "", "runc", "crun":
	default:
		return fmt.Errorf("%w: runc_runtime must be runc or crun, not %q", ErrConfig, c.RuncRuntime)
	}
	if c.GvisorPlatform != "" && !slices.Contains(gvisor.Platforms, c.GvisorPlatform) {
		return fmt.Errorf("%w: gvisor_platform must be one of %v, or absent to probe, not %q", ErrConfig, gvisor.Platforms, c.GvisorPlatform)
	}
	if c.MaxDiskBytes < 0 {
		return fmt.Errorf("%w: max_disk_bytes must not be negative", ErrConfig)
	}
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		return fmt.Errorf("%w: concurrency must be 1 to %d, not %d", ErrConfig, MaxConcurrency, c.Concurrency)
	}
	if err := protocol.CheckLabels(c.Labels); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if r := c.ProcessRunAs; r != nil && (r.UID <= 0 || r.GID <= 0 || int64(r.UID) >= 1<<32-1 || int64(r.GID) >= 1<<32-1) {
		return fmt.Errorf("%w: process_run_as: uid %d and gid %d must be ids other than root (1 to 4294967294)", ErrConfig, r.UID, r.GID)
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return fmt.Errorf("%w: env %q: names must be non-empty without = or NUL, values without NUL", ErrConfig, k)
		}
	}
	return nil
}

func checkPath(name, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsFunc(p, unicode.IsControl) {
		return fmt.Errorf("%w: %s: %q must be a clean absolute path", ErrConfig, name, p)
	}
	return nil
}

// ParseConfig reads a configuration strictly over DefaultConfig: unknown or
// duplicate members, trailing data and wrong types are errors, so that a
// misspelt setting is never silently ignored. The result is validated.
func ParseConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	if err := json.Unmarshal(data, &c, json.RejectUnknownMembers(true)); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadConfig reads and parses the configuration file at path.
func LoadConfig(path string) (Config, error) {
	// The configuration holds the tools' env, which carries their secrets:
	// like ssh with a private key, refuse one that others can read.
	if err := secretfile.Check(path); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, path, err)
	}
	if len(b) > maxConfigFile {
		return Config{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrConfig, path, maxConfigFile)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// StorePath is the agent's durable store in DataDir.
func (c Config) StorePath() string { return filepath.Join(c.DataDir, "agent.db") }

// WorkDir is where runs get their workspaces.
func (c Config) WorkDir() string { return filepath.Join(c.DataDir, "work") }

// Tiers returns the sandbox configuration of this agent: every tier's
// defaults, with the wasm compilation cache and the runc state kept in
// DataDir (private to the agent), runc's root filesystem (gVisor's too)
// from RuncRootFS, runc's runtime from RuncRuntime and gVisor's platform
// from GvisorPlatform.
func (c Config) Tiers() tiers.Config {
	t := tiers.DefaultConfig()
	t.Wasm.CacheDir = filepath.Join(c.DataDir, "wasm-cache")
	t.Runc.StateDir = filepath.Join(c.DataDir, "runc")
	t.Runc.RootFS = c.RuncRootFS
	if c.RuncRuntime != "" {
		t.Runc.Runtime = c.RuncRuntime
	}
	t.Gvisor.OCI.StateDir = filepath.Join(c.DataDir, "gvisor")
	t.Gvisor.OCI.RootFS = c.RuncRootFS
	t.Gvisor.Platform = c.GvisorPlatform
	t.Process.ReadWrite = c.ProcessReadWrite
	if r := c.ProcessRunAs; r != nil {
		t.Process.RunAsUID, t.Process.RunAsGID = r.UID, r.GID
		t.Bwrap.RunAsUID, t.Bwrap.RunAsGID = r.UID, r.GID
	}
	return t
}
