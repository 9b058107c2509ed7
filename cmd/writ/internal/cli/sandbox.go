package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/nodeagent/mcptier"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/tiers"
)

func newSandbox(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Short: "Run tools in Writ's sandbox tiers on this host"}
	cmd.AddCommand(newSandboxRun(e))
	return cmd
}

// sandboxOutcome is what `writ sandbox run` prints: the fields a result
// carries, with output as text, or as base64 when it is not UTF-8.
type sandboxOutcome struct {
	Status         string `json:"status"`
	ExitCode       int    `json:"exit_code"`
	Output         string `json:"output"`
	OutputEncoding string `json:"output_encoding,omitempty"`
	OutputHash     string `json:"output_hash"`
	OutputBytes    int64  `json:"output_bytes"`
	Truncated      bool   `json:"truncated"`
	// Stderr is what the tool wrote on standard error, capped like output
	// (the manifest's output_bytes), as text or base64; StderrBytes counts
	// all of it.
	Stderr         string `json:"stderr"`
	StderrEncoding string `json:"stderr_encoding,omitempty"`
	StderrBytes    int64  `json:"stderr_bytes"`
	// Usage is what the tier measured: wall and CPU time in nanoseconds,
	// peak memory in bytes (0: unknown).
	Usage  sandbox.Usage `json:"usage"`
	Tier   string        `json:"tier"`
	Reason string        `json:"reason,omitempty"`
	// ExecDigest is the SHA-256 of the executable or module that ran;
	// Egress the egress proxy's record of a tool with a network allowlist.
	ExecDigest string               `json:"exec_digest,omitempty"`
	Egress     *sandbox.EgressAudit `json:"egress,omitempty"`
	// MCP names the server and tool a run of the mcp tier called.
	MCP *sandbox.MCPCall `json:"mcp,omitempty"`
}

// tierDriver is the driver of m's tier; for the mcp tier, over the driver
// of the stdio server's inner tier.
func tierDriver(m sandbox.Manifest, cfg tiers.Config) (sandbox.Driver, error) {
	if m.Tier != sandbox.TierMCP {
		return tiers.New(m.Tier, cfg)
	}
	inner := map[string]sandbox.Driver{}
	if m.MCP.InnerTier != "" {
		d, err := tiers.New(m.MCP.InnerTier, cfg)
		if err != nil {
			return nil, err
		}
		inner[m.MCP.InnerTier] = d
	}
	mc := mcptier.DefaultConfig()
	mc.Inner, mc.Egress = inner, cfg.Bwrap.Egress
	return mcptier.New(mc)
}

func newSandboxRun(e *env) *cobra.Command {
	var tier, manifestFile, rootfs, image, workspace string
	cmd := &cobra.Command{
		Use:   "run --tier TIER --manifest FILE [--workspace DIR] [--rootfs DIR | --image TAR] < params.json",
		Short: "Run one invocation of a tool in a sandbox tier, params from standard input",
		Long: `Run one invocation of the tool a manifest describes (docs/tools.md) in the given
tier, with params (a JSON object) read from standard input, and print the outcome
as JSON: status, exit_code, output, output_hash, output_bytes, truncated, stderr,
stderr_bytes, usage, tier, exec_digest, egress for a tool with a network allowlist, and
mcp (the server and tool called) for the mcp tier.
A tier that this host cannot run refuses; nothing falls back to a weaker tier.
Exit status 0 when the tool ran and exited 0, 1 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if tier == "" || manifestFile == "" {
				return errors.New("--tier and --manifest are required")
			}
			b, err := readSmallFile(manifestFile, 1<<20)
			if err != nil {
				return err
			}
			m, err := sandbox.ParseManifest(b)
			if err != nil {
				return err
			}
			if m.Tier != tier {
				return fmt.Errorf("the manifest names tier %q, not %q; a tool runs only in its own tier", m.Tier, tier)
			}
			params, err := readInput(e.in, protocol.DefaultMaxBytes)
			if err != nil {
				return err
			}
			cfg := tiers.DefaultConfig()
			cfg.Runc.RootFS, cfg.Runc.Image = rootfs, image
			cfg.Gvisor.OCI.RootFS, cfg.Gvisor.OCI.Image = rootfs, image
			d, err := tierDriver(m, cfg)
			if err != nil {
				return err
			}
			if workspace == "" {
				// A private directory, and in it a workspace that a tool
				// running as another user (runc's uid 65534) can write.
				dir, err := os.MkdirTemp("", "writ-workspace-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				workspace = filepath.Join(dir, "ws")
				if err := os.Mkdir(workspace, 0o700); err != nil {
					return err
				}
				if err := os.Chmod(workspace, 0o777); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			out, err := d.Run(ctx, sandbox.Invocation{Manifest: m, Params: params, Workspace: workspace})
			if err != nil && !errors.Is(err, sandbox.ErrRefused) {
				return err
			}
			if perr := e.printJSON(outcomeView(out)); perr != nil {
				return perr
			}
			if out.Status != "ok" || out.ExitCode != 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tier, "tier", "", "wasm, gvisor, bwrap, runc, process or mcp")
	cmd.Flags().StringVar(&manifestFile, "manifest", "", "the tool manifest (JSON)")
	cmd.Flags().StringVar(&rootfs, "rootfs", "", "root filesystem directory for the runc and gvisor tiers")
	cmd.Flags().StringVar(&image, "image", "", "OCI image layout tarball for the runc and gvisor tiers' root filesystem (instead of --rootfs)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "the tool's workspace (default: a fresh temporary directory)")
	return cmd
}

func outcomeView(o sandbox.Outcome) sandboxOutcome {
	v := sandboxOutcome{
		Status: string(o.Status), ExitCode: o.ExitCode, OutputHash: o.OutputHash, OutputBytes: o.OutputBytes,
		Truncated: o.Truncated, Tier: o.Tier, Reason: o.Reason, Output: string(o.Output), Usage: o.Usage,
		ExecDigest: o.ExecDigest, Egress: o.Egress, MCP: o.MCP,
	}
	if !utf8.Valid(o.Output) {
		v.Output, v.OutputEncoding = base64.StdEncoding.EncodeToString(o.Output), "base64"
	}
	v.Stderr, v.StderrBytes = string(o.Stderr), o.StderrBytes
	if !utf8.Valid(o.Stderr) {
		v.Stderr, v.StderrEncoding = base64.StdEncoding.EncodeToString(o.Stderr), "base64"
	}
	return v
}
