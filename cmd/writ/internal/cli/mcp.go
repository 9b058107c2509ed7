package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/cmd/writ/internal/mcpserver"
	"github.com/writhq/writ/internal/buildinfo"
	"github.com/writhq/writ/internal/secretfile"
)

type mcpFlags struct {
	server, key, tenant, principal, run, dev string
	approvalWait, ttl, poll                  time.Duration
	httpAddr, tokenFile                      string
	origins                                  []string
	cpuProfile                               string
}

func newMCP(e *env) *cobra.Command {
	var f mcpFlags
	cfg := mcpserver.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "mcp (--dev DIR | --key ID=SECRET_FILE --tenant T --principal P [--server URL]) [--http ADDR --http-token-file FILE]",
		Short: "Serve the registered tools to MCP clients: each call a signed intent, answered once final",
		Long: `Serve Writ's registered tools over the Model Context Protocol. Each tools/call
is one intent signed with the orchestrator key (run: the MCP session, or --run;
idempotency key: the session and the request id, so a retried request never runs
twice), answered with the tool's output once the intent is final, or isError with
Writ's error code. A call awaiting approval reports progress and waits up to
--approval-wait; writ_intent_status answers about it later.

The transport is stdio (what desktop hosts start), or streamable HTTP on --http
ADDR: requests carry "Authorization: Bearer TOKEN" with the token in
--http-token-file (created, 0600, when the file does not exist), and a browser
Origin is refused unless --http-allow-origin names it. ADDR must be a loopback
address: the token travels in clear.`,
		// It honours -o text (the output contract's annotation, which
		// textOutput sets).
		Annotations: map[string]string{"writ-output": "text"},
		Args:        cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := f.config(e, &cfg); err != nil {
				return err
			}
			tuneMCPGC()
			stopProf, err := benchProfiles{cpu: f.cpuProfile}.start()
			if err != nil {
				return err
			}
			defer stopProf()
			log, err := e.logger(false, slog.LevelWarn)
			if err != nil {
				return err
			}
			cfg.Logger, cfg.Version = log, buildinfo.Get().Version
			s, err := mcpserver.New(cfg)
			if err != nil {
				return err
			}
			var ln net.Listener
			var token string
			if f.httpAddr != "" {
				if ln, token, err = f.listen(e); err != nil {
					return err
				}
				defer ln.Close()
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := s.Sync(ctx); err != nil {
				return err
			}
			if ln == nil {
				return s.Run(ctx, &mcp.StdioTransport{})
			}
			fmt.Fprintf(e.err, "writ mcp: streamable HTTP on http://%s/ (bearer token in %s)\n", ln.Addr(), f.tokenFile)
			return s.ServeHTTP(ctx, ln, mcpserver.HTTPConfig{Token: token, AllowedOrigins: f.origins})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dev, "dev", "", "a writ dev data directory: its dev.json gives the server, tenant and orchestrator key")
	fl.StringVar(&f.server, "server", defaultServer(), "the control plane's API address")
	fl.StringVar(&f.key, "key", "", "ID=SECRET_FILE: the orchestrator key that signs the intents")
	fl.StringVar(&f.tenant, "tenant", "", "the intents' tenant")
	fl.StringVar(&f.principal, "principal", "", "the principal policy sees (default with --dev: mcp)")
	fl.StringVar(&f.run, "run", "", "one run id for every intent (default: each MCP session is its own run)")
	fl.DurationVar(&f.approvalWait, "approval-wait", cfg.ApprovalWait, "how long a call waits for an approval before it returns the intent id")
	fl.DurationVar(&f.ttl, "ttl", cfg.IntentTTL, "how long each intent stays valid (1m to 15m)")
	fl.DurationVar(&f.poll, "poll", cfg.PollInterval, "how often the tool catalog is read for changes")
	fl.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address (such as 127.0.0.1:7071) instead of stdio")
	fl.StringVar(&f.tokenFile, "http-token-file", "", "the bearer token of --http (created when missing)")
	fl.StringArrayVar(&f.origins, "http-allow-origin", nil, "a browser origin allowed to call --http, such as http://localhost:3000 (repeatable)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this process, until it ends, to this file (writ bench mcp --mcp-cpuprofile)")
	fl.BoolVar(&cfg.ReportControlPlaneTime, "report-control-plane-time", false, "add to each tools/call result's _meta the time its requests to the control plane took (writ/control_plane_ns; writ bench mcp sets it)")
	_ = fl.MarkHidden("report-control-plane-time")
	return cmd
}

// mcpGCPercent is the garbage collector's target (GOGC) in a process that
// serves MCP: writ mcp, and the floor server of writ bench mcp. The Go MCP
// SDK decodes each message several times, each decode with a fresh 32 KiB
// buffer: about 200 KB of garbage per tools/call on a live heap of a few
// MB, so that at Go's default of 100 the collector runs every twenty calls
// or so. At 400 the heap may grow to five times what is live (some tens of
// MB) and the collector runs a quarter as often (writ bench mcp measures it).
const mcpGCPercent = 400

// tuneMCPGC sets mcpGCPercent, unless GOGC is set: the operator's choice wins.
func tuneMCPGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(mcpGCPercent)
	}
}

// config fills cfg from --dev or from --server, --key, --tenant and
// --principal.
func (f *mcpFlags) config(e *env, cfg *mcpserver.Config) error {
	cfg.ApprovalWait, cfg.IntentTTL, cfg.PollInterval, cfg.Run = f.approvalWait, f.ttl, f.poll, f.run
	cfg.Principal = f.principal
	if f.dev != "" {
		if f.key != "" || f.tenant != "" {
			return errors.New("--dev gives the key and the tenant: give --dev or --key and --tenant, not both")
		}
		creds, err := client.LoadCredentials(filepath.Join(f.dev, "dev.json"))
		if err != nil {
			return err
		}
		secret, err := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
		if err != nil || len(secret) == 0 {
			return fmt.Errorf("%s: the orchestrator secret is not base64", filepath.Join(f.dev, "dev.json"))
		}
		c := client.NewCluster(creds.Servers(), "")
		if creds.CAFile != "" {
			pem, err := readSmallFile(creds.CAFile, 1<<20)
			if err != nil {
				return err
			}
			if err := c.TrustCA(pem); err != nil {
				return err
			}
		}
		cfg.Client, cfg.Tenant, cfg.KeyID, cfg.Secret = c, creds.Tenant, creds.Orchestrator.KeyID, secret
		if cfg.Principal == "" {
			cfg.Principal = "mcp"
		}
		return nil
	}
	if f.key == "" || f.tenant == "" || f.principal == "" {
		return errors.New("give --dev DIR, or --key ID=SECRET_FILE, --tenant and --principal")
	}
	ref, err := parseKeyRef("key", f.key)
	if err != nil {
		return err
	}
	secret, err := readKeyFile(ref.value)
	if err != nil {
		return err
	}
	c, err := e.client(f.server, "")
	if err != nil {
		return err
	}
	cfg.Client, cfg.Tenant, cfg.KeyID, cfg.Secret = c, f.tenant, ref.id, secret
	return nil
}

// listen opens --http's address, a loopback one only (the bearer token
// travels in every request, in clear), and reads its token.
func (f *mcpFlags) listen(e *env) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		return nil, "", err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, "", fmt.Errorf("--http %s: writ mcp serves plain HTTP on a loopback address only; put a TLS-terminating proxy in front to reach it from elsewhere", f.httpAddr)
	}
	token, err := f.httpToken(e)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, token, nil
}

// httpToken reads --http-token-file, or creates it with a new random token
// (0600, never through a link) when it does not exist.
func (f *mcpFlags) httpToken(e *env) (string, error) {
	if f.tokenFile == "" {
		return "", errors.New("--http needs --http-token-file FILE: the bearer token clients send")
	}
	b, err := readSmallFile(f.tokenFile, maxSecretFile)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		rand.Read(raw)
		token := "wmcp_" + base64.RawURLEncoding.EncodeToString(raw)
		if err := secretfile.Create(f.tokenFile, []byte(token+"\n")); err != nil {
			return "", err
		}
		fmt.Fprintf(e.err, "writ mcp: a new bearer token is in %s\n", f.tokenFile)
		return token, nil
	}
	if err != nil {
		return "", fmt.Errorf("--http-token-file: %w", err)
	}
	if err := secretfile.Check(f.tokenFile); err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if len(token) < mcpserver.MinTokenLen {
		return "", fmt.Errorf("--http-token-file %s: the token must be at least %d characters", f.tokenFile, mcpserver.MinTokenLen)
	}
	return token, nil
}
