package sandbox

import (
	"time"
)

// Tier names, as they appear in manifests and outcomes.
const (
	TierWasm    = "wasm"
	TierBwrap   = "bwrap"
	TierRunc    = "runc"
	TierGvisor  = "gvisor"
	TierProcess = "process"
)

// DefaultOutputBytes is the output limit of a manifest that sets none.
const DefaultOutputBytes = 65536

// Manifest describes one tool: what to run, in which tier, with which grants
// and limits. Its JSON form is documented in docs/tools.md; ParseManifest
// reads it strictly.
type Manifest struct {
	Name string `json:"name"`
	Tier string `json:"tier"`

	// Command is the executable and its argv template (every tier but wasm).
	Command *Command `json:"command,omitempty"`
	// Module is the absolute path of a WASI (wasip1) module (wasm tier).
	Module string `json:"module,omitempty"`

	// ReadOnly lists absolute host paths the tool may read (bwrap, runc).
	ReadOnly []string `json:"read_only,omitempty"`
	// Env lists the environment variable names the tool may receive.
	Env []string `json:"env,omitempty"`

	Limits Limits `json:"limits"`

	// Network lists the destinations the tool may reach through the egress
	// proxy. Empty means no network at all.
	Network []Destination `json:"network,omitempty"`

	// AllowInterpreter lets the command be a shell, interpreter or launcher.
	AllowInterpreter bool `json:"allow_interpreter,omitempty"`
	// AllowDashArgs lets templated parameter values start with '-'.
	AllowDashArgs bool `json:"allow_dash_args,omitempty"`

	// MCP names the MCP server and tool of a manifest of tier mcp
	// (manifest_mcp.go).
	MCP *MCP `json:"mcp,omitempty"`
}

// Command is an executable and its argv template. Path is argv[0]; each Args
// element is one whole argv element in which "{{name}}" is replaced by the
// parameter "name" — never split, never interpreted by a shell.
type Command struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
}

// Limits bounds one invocation. Zero fields take the defaults of
// DefaultLimits when the manifest is parsed or hashed.
type Limits struct {
	TimeoutMS   int64 `json:"timeout_ms"`   // wall clock
	CPUSeconds  int64 `json:"cpu_seconds"`  // CPU time (RLIMIT_CPU, cgroup cpu)
	MemoryBytes int64 `json:"memory_bytes"` // address space / cgroup memory / wasm pages
	Pids        int64 `json:"pids"`         // processes and threads (cgroup pids)
	OutputBytes int64 `json:"output_bytes"` // stdout and stderr, each
	OpenFiles   int64 `json:"open_files"`   // RLIMIT_NOFILE
	DiskBytes   int64 `json:"disk_bytes"`   // what the workspace may hold (a tmpfs of that size)
}

// DefaultDiskBytes is the workspace size of a manifest that sets none.
const DefaultDiskBytes = 64 << 20

// Destination is one entry of a network allowlist.
type Destination struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// DefaultLimits returns the limits a manifest gets for the fields it leaves
// at zero.
func DefaultLimits() Limits {
	return Limits{
		TimeoutMS:   30_000,
		CPUSeconds:  30,
		MemoryBytes: 512 << 20,
		Pids:        64,
		OutputBytes: DefaultOutputBytes,
		OpenFiles:   256,
		DiskBytes:   DefaultDiskBytes,
	}
}

// Timeout is the wall-clock limit as a duration.
func (l Limits) Timeout() time.Duration { return time.Duration(l.TimeoutMS) * time.Millisecond }

// WithDefaults returns a copy of m whose zero limits are filled from
// DefaultLimits. Tiers run the result; Hash hashes it.
func (m Manifest) WithDefaults() Manifest {
	d := DefaultLimits()
	l := &m.Limits
	fill := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&l.TimeoutMS, d.TimeoutMS)
	fill(&l.CPUSeconds, d.CPUSeconds)
	fill(&l.MemoryBytes, d.MemoryBytes)
	fill(&l.Pids, d.Pids)
	fill(&l.OutputBytes, d.OutputBytes)
	fill(&l.OpenFiles, d.OpenFiles)
	fill(&l.DiskBytes, d.DiskBytes)
	return m
}
