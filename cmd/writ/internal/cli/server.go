package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
)

func newServer(e *env) *cobra.Command {
	var file, id, dataDir, httpAddr, raftAddr string
	var bootstrap bool
	cmd := &cobra.Command{
		Use:   "server --config FILE",
		Short: "Run a control-plane server",
		Long: `Run a control-plane server from a configuration file (docs/controlplane.md),
with WRIT_ID, WRIT_DATA_DIR, WRIT_HTTP_ADDR and WRIT_RAFT_ADDR, and flags, each
overriding the one before. The API is served over TLS with the server's
certificate; a configuration that would be unsafe is refused with the reason.
This build runs single-server clusters; joining servers into one arrives with
memberlist discovery.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := controlplane.DefaultConfig()
			cfg.Bootstrap = true
			if file != "" {
				f, err := controlplane.LoadFile(file)
				if err != nil {
					return err
				}
				if err := f.Apply(&cfg); err != nil {
					return err
				}
			}
			for env, dst := range map[string]*string{"WRIT_ID": &cfg.ID, "WRIT_DATA_DIR": &cfg.DataDir, "WRIT_HTTP_ADDR": &cfg.HTTPAddr, "WRIT_RAFT_ADDR": &cfg.RaftAddr} {
				if v := os.Getenv(env); v != "" {
					*dst = v
				}
			}
			fl := cmd.Flags()
			for name, pair := range map[string][2]*string{"id": {&cfg.ID, &id}, "data-dir": {&cfg.DataDir, &dataDir}, "http-addr": {&cfg.HTTPAddr, &httpAddr}, "raft-addr": {&cfg.RaftAddr, &raftAddr}} {
				if fl.Changed(name) {
					*pair[0] = *pair[1]
				}
			}
			if fl.Changed("bootstrap") {
				cfg.Bootstrap = bootstrap
			}
			if cfg.LedgerSigner == nil {
				return errors.New("the configuration needs ledger.origin and ledger.seed_file: every receipt is signed")
			}
			cfg.Logger = slog.New(slog.NewJSONHandler(e.err, nil))
			s, err := controlplane.New(cfg)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- s.Serve() }()
			leaderCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = s.WaitLeader(leaderCtx)
			cancel()
			if err != nil {
				s.Close(context.Background())
				return fmt.Errorf("no leader within 30s: %w", err)
			}
			fmt.Fprintf(e.out, "writ server %s: API https://%s, Raft %s\n", cfg.ID, s.Addr(), cfg.RaftAddr)
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
	fl.BoolVar(&bootstrap, "bootstrap", true, "form a new single-server cluster when the data directory is empty")
	return cmd
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
