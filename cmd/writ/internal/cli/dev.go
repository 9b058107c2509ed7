package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
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
			printDevSteps(e, abs, creds)
			<-ctx.Done()
			fmt.Fprintln(e.err, "writ dev: stopping")
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return s.Close(closeCtx)
		},
	}
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
	w("")
	w("An intent that needs approval (tool echo_approval), and its approval:")
	w("  writ intent sign ... --tool echo_approval ... > pending.json && writ intent submit --server %s < pending.json", c.Addr)
	w("  writ approval sign --intent pending.json --key %s=%s --approver %s > approval.json", c.Approver.KeyID, filepath.Join(dir, "approver.key"), c.Approver.Approver)
	w("  writ approval submit --server %s < approval.json", c.Addr)
	w("")
	w("Intents wait as \"dispatched\" until node agents exist. Ctrl-C stops the server; state stays in %s.", dir)
}
