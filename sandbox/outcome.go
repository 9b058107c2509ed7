package sandbox

import "time"

// Status is how an invocation ended. Its values are stable: they travel in
// results and receipts.
type Status string

// The statuses of an Outcome.
const (
	StatusOK          Status = "ok"           // exited with code 0
	StatusError       Status = "error"        // non-zero exit, killed by a signal, or cancelled
	StatusTimeout     Status = "timeout"      // wall-clock or CPU limit reached
	StatusOutputLimit Status = "output_limit" // wrote more than the output limit; stopped
	StatusDiskLimit   Status = "disk_limit"   // filled its workspace (limits.disk_bytes); stopped
	StatusRefused     Status = "refused"      // never started
)

// Outcome reports one invocation.
type Outcome struct {
	Status   Status `json:"status"`
	ExitCode int    `json:"exit_code"` // -1 when the tool did not exit by itself

	// Output is what the tool wrote on stdout, at most the output limit.
	Output []byte `json:"output"`
	// OutputHash is "sha256:"+hex of everything written on stdout, including
	// what was cut.
	OutputHash string `json:"output_hash"`
	// OutputBytes counts everything written on stdout.
	OutputBytes int64 `json:"output_bytes"`
	// Truncated is true when Output is shorter than OutputBytes.
	Truncated bool `json:"truncated"`

	// Stderr is what the tool wrote on stderr, at most the output limit, and
	// StderrBytes counts all of it. Stderr counts towards the output limit.
	Stderr      []byte `json:"stderr,omitempty"`
	StderrBytes int64  `json:"stderr_bytes"`

	Usage Usage `json:"usage"`

	// Tier is the tier that actually ran (or refused) the invocation.
	Tier string `json:"tier"`
	// ExecDigest is "sha256:"+hex of the executable or wasm module the
	// tier ran, after resolving its path; "" when it did not start one.
	ExecDigest string `json:"exec_digest,omitempty"`
	// Egress is the egress proxy's record of a tool with a network
	// allowlist; nil for a tool without one.
	Egress *EgressAudit `json:"egress,omitempty"`
	// MCP names the MCP server and tool a run of the mcp tier called; nil
	// for every other tier.
	MCP *MCPCall `json:"mcp,omitempty"`
	// Reason explains a refusal, a timeout ("wall" or "cpu"), an error that
	// was not an exit code ("canceled", "signal: killed", "memory" when the
	// memory cgroup killed a process of the tool) or an output limit.
	Reason string `json:"reason,omitempty"`

	// WorkspaceUntouched says that the tool never saw the scratch
	// Workspace itself (Invocation.Scratch): a tmpfs this run mounted over
	// it empty held everything the tool wrote, and is gone. The directory
	// is as the caller gave it, empty, and the caller may use it again.
	WorkspaceUntouched bool `json:"-"`
}

// Usage is the resources an invocation consumed, as far as the tier can tell.
// Zero means unknown.
type Usage struct {
	Wall      time.Duration `json:"wall_ns"`
	UserCPU   time.Duration `json:"user_cpu_ns"`
	SystemCPU time.Duration `json:"system_cpu_ns"`
	MaxRSS    int64         `json:"max_rss_bytes"`
	// MemoryBytes is the peak linear memory of a wasm module.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
}

// MCPCall is what a run of the mcp tier called.
type MCPCall struct {
	// Tool is the MCP tool name.
	Tool string `json:"tool"`
	// Server is the stdio server's executable digest ("sha256:"+hex, as
	// ExecDigest) or the HTTP server's URL.
	Server string `json:"server"`
	// InnerTier is the tier the stdio server ran in; "" for an HTTP server.
	InnerTier string `json:"inner_tier,omitempty"`
}
