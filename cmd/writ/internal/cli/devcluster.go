package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/secretfile"
)

// newDevCredentials is `writ dev credentials`: the credentials of a local
// cluster, for deploy/cluster.sh.
func newDevCredentials(e *env) *cobra.Command {
	var out, ca string
	var addrs []string
	cmd := &cobra.Command{
		Use:   "credentials --out FILE --addr URL [--addr URL]... [--ca FILE]",
		Short: "Create the credentials file of a local cluster (make cluster), and ledger.key beside it",
		Long: `Create a credentials file like dev.json (PROTOCOL.md §6) with an "addrs" list of
every server, the orchestrator and approver keys of tenant "dev", an admin token
and the checkpoint key, whose seed goes to ledger.key (0600) beside the file for
the servers. Prints the ledger origin and the admin token's hash, which the
servers' configuration needs. Never replaces a file.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			list := splitList(joinArgs(addrs))
			if len(list) == 0 {
				return fmt.Errorf("--addr is required")
			}
			if ca != "" {
				abs, err := filepath.Abs(ca)
				if err != nil {
					return err
				}
				ca = abs
			}
			c, origin, hash, err := controlplane.ClusterCredentials(out, list, ca)
			if err != nil {
				return err
			}
			if err := writeDevKeys(filepath.Dir(out), c); err != nil {
				return err
			}
			return e.printJSON(map[string]string{"credentials": out, "ledger_origin": origin, "admin_token_hash": hash, "ledger_seed_file": filepath.Join(filepath.Dir(out), "ledger.key")})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the credentials file to create")
	cmd.Flags().StringArrayVar(&addrs, "addr", nil, "a server's API URL, such as https://127.0.0.1:7170 (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&ca, "ca", "", "the cluster CA file clients trust")
	cmd.MarkFlagRequired("out")
	return cmd
}

// newDevRegister is `writ dev register`: what writ dev registers, through
// the admin API of the servers a credentials file names.
func newDevRegister(e *env) *cobra.Command {
	var creds, toolsDir string
	var allowlists []string
	cmd := &cobra.Command{
		Use:   "register --credentials FILE [--tools-dir DIR] [--allowlist DIR]...",
		Short: "Register tenant dev, its keys, the echo tools and the dev policy on the servers of a credentials file",
		Long: `Register tenant dev, its keys, the echo tools and the dev policy on the servers of a
credentials file. --allowlist DIR also writes the registered tools' manifests, exactly
as registered, into DIR: the allowlist (tools_dir) of a node agent that is to run them.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, err := controlplane.LoadDevCredentials(creds)
			if err != nil {
				return err
			}
			cc, err := client.LoadCredentials(creds)
			if err != nil {
				return err
			}
			cl, err := cc.Client()
			if err != nil {
				return err
			}
			if toolsDir == "" {
				if exe, err := os.Executable(); err == nil {
					toolsDir = filepath.Join(filepath.Dir(exe), "tools")
				}
			}
			for _, dir := range allowlists {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				for name, m := range controlplane.DevManifests(toolsDir) {
					if err := secretfile.Write(filepath.Join(dir, name+".json"), m); err != nil {
						return err
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, call := range controlplane.DevAdminCalls(c, toolsDir) {
				if err := cl.Admin(ctx, call.Method, call.Path, call.Body); err != nil {
					return fmt.Errorf("%s /v1/admin/%s: %w", call.Method, call.Path, err)
				}
			}
			return e.printJSON(map[string]any{"registered": true, "servers": cc.Servers()})
		},
	}
	cmd.Flags().StringVar(&creds, "credentials", "", "the credentials file (writ dev credentials)")
	cmd.Flags().StringVar(&toolsDir, "tools-dir", "", "directory holding echo.wasm (default: tools/ beside the writ binary)")
	cmd.Flags().StringArrayVar(&allowlists, "allowlist", nil, "also write the tools' manifests into this agent allowlist directory (repeatable)")
	cmd.MarkFlagRequired("credentials")
	return cmd
}

func joinArgs(a []string) string {
	out := ""
	for i, s := range a {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
