package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/nodeagent"
	"github.com/writhq/writ/sandbox/tiers"
)

func newDev(e *env) *cobra.Command {
	var dir, addr, raftAddr, toolsDir string
	cmd := &cobra.Command{
		Use:   "dev --data-dir DIR",
		Short: "Run a single-server Writ for development, on loopback",
		Long: `Run a single-server control plane on 127.0.0.1:7070 with plain HTTP (loopback
only), tenant "dev", an orchestrator key and an approver key (in DIR/dev.json and
DIR/orchestrator.key, DIR/approver.key), the tools echo and echo_approval, and a
permissive dev policy. Stop it with Ctrl-C; state persists in DIR.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if toolsDir == "" {
				if exe, err := os.Executable(); err == nil {
					toolsDir = filepath.Join(filepath.Dir(exe), "tools")
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			base := controlplane.DefaultConfig()
			base.Logger = slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
			startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			s, creds, err := controlplane.StartDev(startCtx, controlplane.DevConfig{
				DataDir: abs, HTTPAddr: addr, RaftAddr: raftAddr, ToolsDir: toolsDir, Base: base,
			})
			cancel()
			if err != nil {
				return err
			}
			if err := writeDevKeys(abs, creds); err != nil {
				s.Close(context.Background())
				return err
			}
			agentDone := make(chan error, 1)
			if err := startDevAgent(ctx, s, abs, toolsDir, base.Logger, agentDone); err != nil {
				s.Close(context.Background())
				return err
			}
			printDevSteps(e, abs, creds)
			select {
			case <-ctx.Done():
			case err := <-agentDone:
				fmt.Fprintln(e.err, "writ dev: the agent stopped:", err)
				stop()
			}
			fmt.Fprintln(e.err, "writ dev: stopping")
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return s.Close(closeCtx)
		},
	}
	cmd.AddCommand(newDevCredentials(e), newDevRegister(e))
	cmd.Flags().StringVar(&dir, "data-dir", "", "directory for state and credentials")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7070", "API address (loopback only)")
	cmd.Flags().StringVar(&raftAddr, "raft-addr", "127.0.0.1:7071", "Raft address")
	cmd.Flags().StringVar(&toolsDir, "tools-dir", "", "directory holding echo.wasm (default: tools/ beside the writ binary)")
	return cmd
}

// writeDevKeys writes the dev keys as key files the sign commands read.
func writeDevKeys(dir string, c *controlplane.DevCredentials) error {
	for name, b64 := range map[string]string{"orchestrator.key": c.Orchestrator.Secret, "approver.key": c.Approver.Seed} {
		if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
			return err
		}
		if err := writeKeyFile(filepath.Join(dir, name), []byte(b64+"\n"), 0o600, true); err != nil {
			return err
		}
	}
	return nil
}

func printDevSteps(e *env, dir string, c *controlplane.DevCredentials) {
	w := func(format string, a ...any) { fmt.Fprintf(e.out, format+"\n", a...) }
	w("Writ dev server on %s (tenant %q); credentials in %s", c.Addr, c.Tenant, filepath.Join(dir, "dev.json"))
	w("")
	w("Submit an intent:")
	w("  writ intent sign --key %s=%s --tenant %s --principal support-bot --run run-1 \\", c.Orchestrator.KeyID, filepath.Join(dir, "orchestrator.key"), c.Tenant)
	w("      --tool echo --params '{\"msg\":\"hello\"}' > intent.json")
	w("  writ intent submit --server %s --wait 5s < intent.json", c.Addr)
	w("Read it with its output (a read signed with the tenant's key):")
	w("  writ intent get INTENT_ID --server %s --tenant %s --key %s=%s", c.Addr, c.Tenant, c.Orchestrator.KeyID, filepath.Join(dir, "orchestrator.key"))
	w("")
	w("An intent that needs approval (tool echo_approval), and its approval:")
	w("  writ intent sign ... --tool echo_approval ... > pending.json && writ intent submit --server %s < pending.json", c.Addr)
	w("  writ approval sign --intent pending.json --key %s=%s --approver %s > approval.json", c.Approver.KeyID, filepath.Join(dir, "approver.key"), c.Approver.Approver)
	w("  writ approval submit --server %s < approval.json", c.Addr)
	w("")
	w("A node agent runs in this process (state in %s); its allowlist holds the dev tools.", filepath.Join(dir, "agent"))
	w("Ctrl-C stops the server and the agent; state stays in %s.", dir)
}

// startDevAgent runs a node agent in this process, enrolled on first start
// with a join token from the server itself, its allowlist holding exactly
// the manifests the dev tools were registered with. It returns once the node
// is ready, so that the first intent has somewhere to run.
func startDevAgent(ctx context.Context, s *controlplane.Server, dir, toolsDir string, log *slog.Logger, done chan error) error {
	allow := filepath.Join(dir, "agent-tools")
	if err := os.MkdirAll(allow, 0o700); err != nil {
		return err
	}
	for name, m := range controlplane.DevManifests(toolsDir) {
		if err := os.WriteFile(filepath.Join(allow, name+".json"), m, 0o600); err != nil {
			return err
		}
	}
	agentDir := filepath.Join(dir, "agent")
	token := ""
	if _, err := nodeagent.LoadIdentity(agentDir); errors.Is(err, nodeagent.ErrNotEnrolled) {
		tok, aerr := s.CreateJoinToken(ctx, map[string]string{"dev": "true"}, 10*time.Minute)
		if aerr != nil {
			return aerr
		}
		token = tok.Token
	}
	ready := make(chan string, 1)
	cfg := nodeagent.DefaultConfig()
	cfg.Servers, cfg.DataDir, cfg.ToolsDir, cfg.Concurrency = []string{s.AgentAddr()}, agentDir, allow, 8
	go func() {
		done <- nodeagent.Run(ctx, nodeagent.RunConfig{Config: cfg, Token: token, Name: "dev-agent", PlainHTTP: true,
			Tiers: tiers.DefaultConfig(), Logger: log, Ready: func(node string) { ready <- node }})
	}()
	var node string
	select {
	case node = <-ready:
	case err := <-done:
		return fmt.Errorf("the dev agent did not start: %w", err)
	case <-time.After(30 * time.Second):
		return errors.New("the dev agent did not start within 30 s")
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, ok := s.Node(node); ok && n.Status == "ready" {
			return nil
		}
	}
	return errors.New("the dev agent did not connect within 15 s")
}
