package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/nodeagent"
)

func newAgent(e *env) *cobra.Command {
	var configFile, dataDir, toolsDir, name, runcRoot string
	joinToken := joinTokenFlag()
	var servers, processRW []string
	var concurrency int
	var labels map[string]string
	cmd := &cobra.Command{
		Use:   "agent --server ADDR[,ADDR...] --token-file FILE --data-dir DIR",
		Short: "Run a node agent: enroll once, then run what the control plane dispatches",
		Long: `Run a node agent. On first start it enrolls with a one-time join token (writ token
create): it generates its keys here, checks the cluster CA against the token's pin,
and receives a client certificate. Then it keeps a QUIC session with any of the
servers, re-verifies every dispatch, runs allowlisted tools in their sandbox, and
keeps each signed result until a server acknowledges it. A server address is
host:port or https://host:port (the API's port; sessions use the same port over
UDP); http://host:port enrolls over plain HTTP, for a dev server on loopback only.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg := nodeagent.DefaultConfig()
			if configFile != "" {
				loaded, err := nodeagent.LoadConfig(configFile)
				if err != nil {
					return err
				}
				cfg = loaded
			}
			plain := false
			if !c.Flags().Changed("server") && configFile == "" && os.Getenv("WRIT_SERVER") != "" {
				servers = []string{os.Getenv("WRIT_SERVER")}
			}
			if len(servers) > 0 {
				var err error
				if cfg.Servers, plain, err = agentServers(servers); err != nil {
					return err
				}
			}
			set := func(flag string, dst *string, v string) {
				if c.Flags().Changed(flag) {
					*dst = v
				}
			}
			set("data-dir", &cfg.DataDir, dataDir)
			set("tools-dir", &cfg.ToolsDir, toolsDir)
			set("token-file", &cfg.TokenFile, joinToken.file)
			// The token file is read by the agent, and only until it is
			// enrolled; --token (which warns) or $WRIT_JOIN_TOKEN otherwise.
			token := ""
			if joinToken.value != "" {
				var err error
				if token, err = joinToken.get(e); err != nil {
					return err
				}
			} else if joinToken.file == "" {
				token = os.Getenv(joinToken.env)
			}
			set("runc-rootfs", &cfg.RuncRootFS, runcRoot)
			if c.Flags().Changed("process-read-write") {
				cfg.ProcessReadWrite = processRW
			}
			if c.Flags().Changed("concurrency") {
				cfg.Concurrency = concurrency
			}
			if c.Flags().Changed("labels") {
				cfg.Labels = labels
			}
			// The tiers keep their state in the data directory, the one
			// place the installed service may write.
			tc := cfg.Tiers()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log, lerr := e.logger(false, slog.LevelInfo)
			if lerr != nil {
				return lerr
			}
			err := nodeagent.Run(ctx, nodeagent.RunConfig{Config: cfg, Token: token, Name: name, PlainHTTP: plain, Tiers: tc, Logger: log})
			if errors.Is(err, nodeagent.ErrRevoked) {
				fmt.Fprintln(e.err, "writ agent: this node is revoked; enroll again with a new data directory and token")
				return exitError{3}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "agent configuration file (JSON, docs/agent.md); flags override it")
	f.StringSliceVar(&servers, "server", nil, "control-plane servers: host:port, https://host:port, or http://host:port for a dev server (repeat or comma-separate; default $WRIT_SERVER)")
	joinToken.register(f) // --token, --token-file: the one-time join token, only for the first start
	f.StringVar(&dataDir, "data-dir", "", "state directory: keys, certificate, journal and outbox")
	f.StringVar(&toolsDir, "tools-dir", "", "the tool allowlist: one sandbox manifest per *.json file")
	f.StringVar(&name, "name", "", "node name (default: the host name)")
	f.StringVar(&runcRoot, "runc-rootfs", "", "root filesystem for the runc tier")
	f.IntVar(&concurrency, "concurrency", 4, "tools run at once")
	f.StringToStringVar(&labels, "labels", nil, "this node's own labels, k=v[,k=v...] (its join token's win on the same key)")
	f.StringSliceVar(&processRW, "process-read-write", nil, "host directories process-tier tools may write besides their workspace")
	cmd.AddCommand(newAgentInstall(e))
	return cmd
}
