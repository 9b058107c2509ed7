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
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/nodeagent"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox/tiers"
	"github.com/writhq/writ/sandbox/tools/echowasm"
)

func newDev(e *env) *cobra.Command {
	var dir, addr, raftAddr, toolsDir, allowlist string
	var resetPolicy bool
	cmd := &cobra.Command{
		Use:   "dev --data-dir DIR",
		Short: "Run a single-server Writ for development, on loopback",
		Long: `Run a single-server control plane on 127.0.0.1:7070 with plain HTTP (loopback
only), tenant "dev", an orchestrator key and an approver key (in DIR/dev.json and
DIR/orchestrator.key, DIR/approver.key), the tools echo and echo_approval, and a
permissive dev policy. Stop it with Ctrl-C; state persists in DIR. --allowlist
FOLDER lets its node agent also run the tools whose manifests are in FOLDER (as
writ tool init writes them), read once at start; register each with writ tool apply.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			// The user's manifests are read before anything starts: one that
			// does not parse refuses the start, naming its file.
			userTools, err := readDevAllowlist(allowlist)
			if err != nil {
				return err
			}
			if toolsDir == "" {
				if toolsDir, err = devToolsDir(abs); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			base := controlplane.DefaultConfig()
			if base.Logger, err = e.logger(false, slog.LevelInfo); err != nil {
				return err
			}
			startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			s, creds, err := controlplane.StartDev(startCtx, controlplane.DevConfig{
				DataDir: abs, HTTPAddr: addr, RaftAddr: raftAddr, ToolsDir: toolsDir, Base: base, ReadyLater: true, ResetPolicy: resetPolicy,
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
			node, err := startDevAgent(ctx, s, abs, toolsDir, userTools, base.Logger, agentDone)
			if err != nil {
				s.Close(context.Background())
				return err
			}
			// Ready: dev.json appears, and then /v1/health answers 200, only
			// now, with the dev keys committed and the agent connected.
			if err := controlplane.PublishDevCredentials(abs); err != nil {
				s.Close(context.Background())
				return err
			}
			s.SetReadyCheck(func() error {
				if n, ok := s.Node(node); !ok || n.Status != "ready" {
					return errors.New("the dev agent is not connected")
				}
				return nil
			})
			printDevSteps(e, abs, creds)
			if dev, hash := s.DevPolicyInstalled(); dev {
				fmt.Fprintf(e.out, "Policy: the permissive dev policy (%s). A policy you apply (writ policy apply) is kept across restarts; --reset-policy puts the dev policy back.\n", hash)
			} else {
				fmt.Fprintf(e.out, "Policy: the policy you applied is kept (%s); writ dev --reset-policy puts the dev policy back.\n", hash)
			}
			fmt.Fprintf(e.out, "A node agent runs in this process (state in %s). Ctrl-C stops both; state stays in %s.\n", filepath.Join(abs, "agent"), abs)
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
	cmd.Flags().BoolVar(&resetPolicy, "reset-policy", false, "install the dev policy even if another policy was applied (the dev policy is otherwise installed only on first start)")
	cmd.Flags().StringVar(&allowlist, "allowlist", "", "a folder of tool manifests (NAME.json, as writ tool init writes) the dev agent also runs; read at start")
	cmd.Flags().StringVar(&toolsDir, "tools-dir", "", "directory holding echo.wasm (default: tools/ beside the writ binary when it has one, else the built-in echo module in DIR/tools)")
	return cmd
}

// devToolsDir is where writ dev finds echo.wasm when --tools-dir is not
// given: tools/ beside the binary, as `make build` lays it out, or else
// DIR/tools, where it writes the built-in echo module (a binary made with
// `go install` has nothing beside it).
func devToolsDir(dataDir string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), "tools")
		if _, err := os.Stat(filepath.Join(beside, "echo.wasm")); err == nil {
			return beside, nil
		}
	}
	dir := filepath.Join(dataDir, "tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "echo.wasm"), echowasm.Module(), 0o644)
}

// devAdminTokenFile is the admin token of writ dev, for --token-file.
const devAdminTokenFile = "admin.token"

// writeDevKeys writes the dev keys as key files the sign commands read, and
// the admin token as the file the admin commands read (--token-file), so
// that no step the banner prints puts a secret on a command line.
func writeDevKeys(dir string, c *controlplane.DevCredentials) error {
	if err := writeKeyFile(filepath.Join(dir, devAdminTokenFile), []byte(c.AdminToken+"\n"), 0o600, true); err != nil {
		return err
	}
	// The ledger's verifier key is public: writ verify reads it with --key-file.
	if err := os.WriteFile(filepath.Join(dir, devLedgerKeyFile), []byte(c.LedgerKey+"\n"), 0o644); err != nil {
		return err
	}
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

// devLedgerKeyFile holds the ledger's note verifier key, for --key-file.
const devLedgerKeyFile = "ledger.pub"

// printDevSteps prints the banner: commands to paste, in order, into any
// shell, each runnable as printed (a test runs them all); no secret is on
// any of their command lines.
func printDevSteps(e *env, dir string, c *controlplane.DevCredentials) {
	w := func(format string, a ...any) { fmt.Fprintf(e.out, format+"\n", a...) }
	bin := "writ"
	if exe, err := os.Executable(); err == nil {
		bin = exe
	}
	orch := c.Orchestrator.KeyID + "=" + filepath.Join(dir, "orchestrator.key")
	w("Writ dev server on %s (tenant %q), ready; credentials in %s", c.Addr, c.Tenant, filepath.Join(dir, "dev.json"))
	w("")
	w("Point a shell at it (the CLI reads the server and the admin token's file from these):")
	w("  export PATH=%s:\"$PATH\"", filepath.Dir(bin))
	w("  export WRIT_SERVER=%s WRIT_TOKEN_FILE=%s", c.Addr, filepath.Join(dir, devAdminTokenFile))
	w("")
	w("Submit an intent, read its output, and verify its receipt offline:")
	w("  writ intent sign --key %s --tenant %s --principal support-bot --run run-1 --tool echo --params '{\"msg\":\"hello\"}' > intent.json", orch, c.Tenant)
	w("  writ intent submit --wait 10s < intent.json")
	w("  writ -o text intent get --intent intent.json --key %s", orch)
	w("  writ receipt get --intent intent.json --key %s > receipt.json", orch)
	w("  writ verify receipt receipt.json --key-file %s", filepath.Join(dir, devLedgerKeyFile))
	w("")
	w("An intent that needs approval (tool echo_approval), and its approval:")
	w("  writ intent sign --key %s --tenant %s --principal support-bot --run run-1 --tool echo_approval --params '{\"msg\":\"hi\"}' > pending.json", orch, c.Tenant)
	w("  writ intent submit < pending.json")
	w("  writ approval sign --intent pending.json --key %s=%s --approver %s > approval.json", c.Approver.KeyID, filepath.Join(dir, "approver.key"), c.Approver.Approver)
	w("  writ approval submit < approval.json")
	w("  writ intent get --intent pending.json --key %s --wait 10s", orch)
	w("")
	w("The dashboard is %s/ui/; sign in with a token this prints:", c.Addr)
	w("  writ -o text token create --role admin")
	w("  writ session list")
	w("")
}

// readDevAllowlist reads the manifests of writ dev --allowlist DIR as a
// node agent reads its allowlist (every *.json file must parse, none may be
// writable by others, no two may name the same tool), and returns each
// one's bytes by tool name. A tool may not take the name of a dev tool.
func readDevAllowlist(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, nil
	}
	a, err := nodeagent.LoadAllowlist(dir)
	if err != nil {
		return nil, fmt.Errorf("--allowlist %s: %w", dir, err)
	}
	dev := controlplane.DevManifests("/")
	tools := make(map[string][]byte, a.Len())
	for _, ref := range a.Refs() {
		e, _ := a.Lookup(ref.Name)
		if _, taken := dev[ref.Name]; taken {
			return nil, fmt.Errorf("--allowlist %s: %s names the tool %q, which is a dev tool; rename it", dir, e.File, ref.Name)
		}
		raw, err := readSmallFile(e.File, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("--allowlist %s: %w", dir, err)
		}
		// The bytes read again must still be the manifest that was checked.
		if h, err := protocol.ManifestHash(raw); err != nil || h != e.Hash {
			return nil, fmt.Errorf("--allowlist %s: %s changed while it was read", dir, e.File)
		}
		tools[ref.Name] = raw
	}
	return tools, nil
}

// startDevAgent runs a node agent in this process, enrolled on first start
// with a join token from the server itself, its allowlist holding exactly
// the manifests the dev tools were registered with and the user's (from
// --allowlist). It returns once the node is ready, so that the first intent
// has somewhere to run, with the node's id.
func startDevAgent(ctx context.Context, s *controlplane.Server, dir, toolsDir string, user map[string][]byte, log *slog.Logger, done chan error) (string, error) {
	allow := filepath.Join(dir, "agent-tools")
	if err := os.MkdirAll(allow, 0o700); err != nil {
		return "", err
	}
	// What an earlier start allowed goes: the allowlist is this start's.
	old, err := filepath.Glob(filepath.Join(allow, "*.json"))
	if err != nil {
		return "", err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return "", err
		}
	}
	manifests := controlplane.DevManifests(toolsDir)
	for name, m := range user {
		manifests[name] = m
	}
	for name, m := range manifests {
		if err := secretfile.Write(filepath.Join(allow, name+".json"), m); err != nil {
			return "", err
		}
	}
	agentDir := filepath.Join(dir, "agent")
	token := ""
	if _, err := nodeagent.LoadIdentity(agentDir); errors.Is(err, nodeagent.ErrNotEnrolled) {
		tok, aerr := s.CreateJoinToken(controlplane.WithActor(ctx, controlplane.ActorDev), map[string]string{"dev": "true"}, 10*time.Minute)
		if aerr != nil {
			return "", aerr
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
		return "", fmt.Errorf("the dev agent did not start: %w", err)
	case <-time.After(30 * time.Second):
		return "", errors.New("the dev agent did not start within 30 s")
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n, ok := s.Node(node); ok && n.Status == "ready" {
			return node, nil
		}
	}
	return "", errors.New("the dev agent did not connect within 15 s")
}
