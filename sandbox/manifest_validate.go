package sandbox

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/writhq/writ/sandbox/internal/argv"
)

var (
	toolName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	hostName = regexp.MustCompile(`^[A-Za-z0-9.*:\[\]-]{1,253}$`)
)

// Upper bounds a manifest may ask for; beyond them it is surely a mistake.
const (
	maxOutputBytes = 64 << 20
	maxArgs        = 256
)

// Validate checks a manifest as the tiers will read it. Errors wrap
// ErrInvalidManifest.
func (m Manifest) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidManifest, fmt.Sprintf(format, a...))
	}
	if !toolName.MatchString(m.Name) {
		return bad("name %q: want 1-64 of [a-z0-9._-]", m.Name)
	}
	if m.MCP != nil && m.Tier != TierMCP {
		return bad("mcp member in a manifest of the %s tier", m.Tier)
	}
	switch m.Tier {
	case TierMCP:
		if err := m.validateMCP(); err != nil {
			return err
		}
	case TierWasm:
		if m.Module == "" || m.Command != nil {
			return bad("wasm tier needs module and no command")
		}
		if err := absPath(m.Module); err != nil {
			return bad("module: %v", err)
		}
	case TierBwrap, TierRunc, TierGvisor, TierProcess:
		if m.Command == nil || m.Module != "" {
			return bad("%s tier needs command and no module", m.Tier)
		}
		if err := absPath(m.Command.Path); err != nil {
			return bad("command.path: %v", err)
		}
		if len(m.Command.Args) > maxArgs {
			return bad("more than %d args", maxArgs)
		}
		for i, a := range m.Command.Args {
			if _, err := argv.Parse(a); err != nil {
				return bad("command.args[%d]: %v", i, err)
			}
		}
	default:
		return bad("tier %q: want wasm, gvisor, bwrap, runc, process or mcp", m.Tier)
	}
	for _, p := range m.ReadOnly {
		if err := absPath(p); err != nil {
			return bad("read_only %q: %v", p, err)
		}
	}
	seen := map[string]bool{}
	for _, e := range m.Env {
		if !envName.MatchString(e) || seen[e] {
			return bad("env %q: invalid or repeated name", e)
		}
		seen[e] = true
	}
	l := m.Limits
	for name, v := range map[string]int64{"timeout_ms": l.TimeoutMS, "cpu_seconds": l.CPUSeconds,
		"memory_bytes": l.MemoryBytes, "pids": l.Pids, "output_bytes": l.OutputBytes, "open_files": l.OpenFiles, "disk_bytes": l.DiskBytes} {
		if v < 0 {
			return bad("limits.%s is negative", name)
		}
	}
	if l.OutputBytes > maxOutputBytes {
		return bad("limits.output_bytes above %d", maxOutputBytes)
	}
	if l.MemoryBytes != 0 && l.MemoryBytes < 1<<20 {
		return bad("limits.memory_bytes below 1 MiB")
	}
	if l.DiskBytes != 0 && l.DiskBytes < 1<<20 {
		return bad("limits.disk_bytes below 1 MiB")
	}
	for _, d := range m.Network {
		if !hostName.MatchString(d.Host) || d.Port < 1 || d.Port > 65535 {
			return bad("network destination %q:%d invalid", d.Host, d.Port)
		}
	}
	return nil
}

// absPath accepts clean absolute paths without NUL bytes.
func absPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty")
	case !filepath.IsAbs(p):
		return fmt.Errorf("%q is not absolute", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("%q is not clean", p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("contains NUL")
	}
	return nil
}
