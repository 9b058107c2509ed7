package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
)

func newServer(e *env) *cobra.Command {
	var file, id, dataDir, httpAddr, raftAddr, gossipAddr string
	var join []string
	var bootstrap bool
	var expect int
	cmd := &cobra.Command{
		Use:   "server --config FILE",
		Short: "Run a control-plane server",
		Long: `Run a control-plane server from a configuration file (docs/controlplane.md),
with WRIT_ID, WRIT_DATA_DIR, WRIT_HTTP_ADDR, WRIT_RAFT_ADDR, WRIT_GOSSIP_ADDR,
WRIT_JOIN (comma-separated) and WRIT_BOOTSTRAP_EXPECT, and flags, each overriding
the one before. The API is served over TLS with the server's certificate; a
configuration that would be unsafe is refused with the reason.

A cluster: start 3 (or 5) servers with --bootstrap-expect 3 and --join naming
the others' gossip addresses; the cluster forms once all of them see each other.
Without join or bootstrap_expect, the server forms a single-server cluster.
`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := controlplane.DefaultConfig()
			bootstrapSet := false
			if file != "" {
				f, err := controlplane.LoadFile(file)
				if err != nil {
					return err
				}
				if err := f.Apply(&cfg); err != nil {
					return err
				}
				bootstrapSet = f.Bootstrap != nil
				if err := setMemoryLimit(f.Limits.MemoryLimit); err != nil {
					return err
				}
			}
			for env, dst := range map[string]*string{"WRIT_ID": &cfg.ID, "WRIT_DATA_DIR": &cfg.DataDir, "WRIT_HTTP_ADDR": &cfg.HTTPAddr, "WRIT_RAFT_ADDR": &cfg.RaftAddr} {
				if v := os.Getenv(env); v != "" {
					*dst = v
				}
			}
			if v := os.Getenv("WRIT_GOSSIP_ADDR"); v != "" {
				cfg.Cluster.GossipAddr = v
			}
			if v := os.Getenv("WRIT_JOIN"); v != "" {
				cfg.Cluster.Join = splitList(v)
			}
			if v := os.Getenv("WRIT_BOOTSTRAP_EXPECT"); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					return fmt.Errorf("WRIT_BOOTSTRAP_EXPECT=%q is not a number", v)
				}
				cfg.Cluster.BootstrapExpect = n
			}
			fl := cmd.Flags()
			if fl.Changed("gossip-addr") {
				cfg.Cluster.GossipAddr = gossipAddr
			}
			if fl.Changed("join") {
				cfg.Cluster.Join = nil
				for _, j := range join {
					cfg.Cluster.Join = append(cfg.Cluster.Join, splitList(j)...)
				}
			}
			if fl.Changed("bootstrap-expect") {
				cfg.Cluster.BootstrapExpect = expect
			}
			for name, pair := range map[string][2]*string{"id": {&cfg.ID, &id}, "data-dir": {&cfg.DataDir, &dataDir}, "http-addr": {&cfg.HTTPAddr, &httpAddr}, "raft-addr": {&cfg.RaftAddr, &raftAddr}} {
				if fl.Changed(name) {
					*pair[0] = *pair[1]
				}
			}
			if fl.Changed("bootstrap") {
				cfg.Bootstrap, bootstrapSet = bootstrap, true
			}
			if !bootstrapSet {
				// Alone unless told to join or to expect others.
				cfg.Bootstrap = len(cfg.Cluster.Join) == 0 && cfg.Cluster.BootstrapExpect == 0
			}
			if cfg.LedgerSigner == nil {
				return errors.New("the configuration needs ledger.origin and ledger.seed_file: every receipt is signed")
			}
			logger, err := e.logger(true, slog.LevelInfo)
			if err != nil {
				return err
			}
			cfg.Logger = logger
			var clock *offsetClock
			if path := os.Getenv(clockOffsetEnv); path != "" {
				if clock, err = newOffsetClock(path); err != nil {
					return err
				}
				cfg.Verify.Now = clock.Now
				logger.Warn("the server's clock is offset by a file", "file", path, "offset", time.Duration(clock.off.Load()))
			}
			s, err := controlplane.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if clock != nil {
				go clock.watch(ctx, logger)
			}
			errc := make(chan error, 1)
			go func() { errc <- s.Serve() }()
			if cfg.Cluster.GossipAddr == "" {
				// A single server leads at once, or something is wrong.
				leaderCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err = s.WaitLeader(leaderCtx)
				cancel()
				if err != nil {
					s.Close(context.Background())
					return fmt.Errorf("no leader within 30s: %w", err)
				}
			}
			// A cluster member serves at once: reads locally, and writes
			// answer no_leader until the cluster has formed.
			fmt.Fprintf(e.out, "writ server %s: API https://%s, Raft %s, gossip %s", cfg.ID, s.Addr(), cfg.RaftAddr, cfg.Cluster.GossipAddr)
			if a := s.AgentAddr(); a != "" {
				fmt.Fprintf(e.out, ", node sessions udp://%s (CA %s)", a, s.CAFingerprint())
			}
			fmt.Fprintln(e.out)
			select {
			case <-ctx.Done():
			case err := <-errc:
				return err
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return s.Close(closeCtx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "config", "", "the configuration file (JSON)")
	fl.StringVar(&id, "id", "", "server id")
	fl.StringVar(&dataDir, "data-dir", "", "data directory")
	fl.StringVar(&httpAddr, "http-addr", "", "API address")
	fl.StringVar(&raftAddr, "raft-addr", "", "Raft address")
	fl.BoolVar(&bootstrap, "bootstrap", false, "form a new single-server cluster when the data directory is empty (the default without join and bootstrap-expect)")
	fl.StringVar(&gossipAddr, "gossip-addr", "", "memberlist address (TCP and UDP) where servers find each other")
	fl.StringArrayVar(&join, "join", nil, "gossip address of another server, ADDR[,ADDR] (repeatable)")
	fl.IntVar(&expect, "bootstrap-expect", 0, "form a new cluster once this many servers (3 or 5) see each other")
	return cmd
}

// setMemoryLimit sets the process's soft memory limit (limits.memory_limit)
// unless GOMEMLIMIT, which the Go runtime reads itself, is set: the garbage
// collector then works harder as the heap nears the limit, and returns
// freed memory to the system to stay under it.
func setMemoryLimit(n int64) error {
	switch {
	case n == 0 || os.Getenv("GOMEMLIMIT") != "":
		return nil
	case n < 64<<20:
		return fmt.Errorf("limits.memory_limit %d is under 64 MiB: the server would spend its time collecting garbage", n)
	}
	debug.SetMemoryLimit(n)
	return nil
}

func newCA(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "ca", Short: "Create the cluster CA and issue server certificates"}
	var dir string
	var days int
	create := &cobra.Command{
		Use:   "create --dir DIR",
		Short: "Create a cluster CA: DIR/ca.pem and DIR/ca.key (0600)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := controlplane.CreateCA(dir, time.Duration(days)*24*time.Hour); err != nil {
				return err
			}
			return e.printJSON(map[string]string{"ca": dir + "/ca.pem"})
		},
	}
	create.Flags().StringVar(&dir, "dir", "", "directory for the CA files")
	create.Flags().IntVar(&days, "days", 3650, "validity in days")
	create.MarkFlagRequired("dir")
	var caDir, id, outDir string
	var hosts []string
	issue := &cobra.Command{
		Use:   "issue --ca-dir DIR --id ID --host H [--host H]... --out-dir DIR",
		Short: "Issue a server certificate naming writ://server/ID: OUT/ID.pem and OUT/ID.key (0600)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := controlplane.IssueServerCert(caDir, id, hosts, time.Duration(days)*24*time.Hour, outDir); err != nil {
				return err
			}
			return e.printJSON(map[string]string{"cert": outDir + "/" + id + ".pem", "key": outDir + "/" + id + ".key"})
		},
	}
	issue.Flags().StringVar(&caDir, "ca-dir", "", "the CA's directory")
	issue.Flags().StringVar(&id, "id", "", "the server's id")
	issue.Flags().StringArrayVar(&hosts, "host", nil, "a DNS name or IP address the server is reached at (repeatable)")
	issue.Flags().StringVar(&outDir, "out-dir", ".", "where to write the certificate and key")
	issue.Flags().IntVar(&days, "days", 365, "validity in days")
	issue.MarkFlagRequired("ca-dir")
	issue.MarkFlagRequired("id")
	cmd.AddCommand(create, issue)
	return cmd
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
