package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/freeport"
	"github.com/writhq/writ/internal/secretfile"
)

// Cluster is n servers running in this process.
type Cluster struct {
	// Servers are the cluster's servers, s1 to sN.
	Servers []*controlplane.Server
	// Creds are the credentials writ dev would write: the admin token, the
	// tenant and its orchestrator and approver keys.
	Creds *controlplane.DevCredentials
	// Dir holds the cluster's CA (pki/ca.pem), keyring, credentials
	// (dev.json), ledger key and each server's data directory.
	Dir string
}

// Start starts n servers (3 or 5) in this process on loopback, with a new
// cluster CA, keyring and checkpoint key in dir, found by each other through
// memberlist (bootstrap_expect n), and registers what writ dev registers,
// through the leader's API with the admin token. base sets limits and the
// logger; when base.AgentAddr is set, each server also takes node sessions,
// over UDP on its API's port number, and holds the CA key to enroll nodes.
// The tools are registered with their module in dir/tools/echo.wasm. ctx
// bounds the wait for a leader and the registration.
func Start(ctx context.Context, dir string, n int, base controlplane.Config) (*Cluster, error) {
	pki := filepath.Join(dir, "pki")
	if err := controlplane.CreateCA(pki, 24*time.Hour); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := secretfile.CreateMode(filepath.Join(dir, "keyring.key"), []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	type ports struct{ api, raft, gossip string }
	var ps []ports
	var join, addrs []string
	for i := 0; i < n; i++ {
		// Ports free for both TCP and UDP (node sessions use the API's
		// port number over UDP), claimed across processes.
		p := ports{freeport.MustLoopback(), freeport.MustLoopback(), freeport.MustLoopback()}
		ps = append(ps, p)
		join = append(join, p.gossip)
		addrs = append(addrs, "https://"+p.api)
	}
	creds, origin, hash, err := controlplane.ClusterCredentials(filepath.Join(dir, "dev.json"), addrs, filepath.Join(pki, "ca.pem"))
	if err != nil {
		return nil, err
	}
	signer, vkey, err := controlplane.LedgerKey(origin, filepath.Join(dir, "ledger.key"))
	if err != nil {
		return nil, err
	}
	c := &Cluster{Creds: creds, Dir: dir}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("s%d", i+1)
		if err := controlplane.IssueServerCert(pki, id, []string{"127.0.0.1"}, 24*time.Hour, pki); err != nil {
			c.Close()
			return nil, err
		}
		cfg := base
		cfg.ID, cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr = id, filepath.Join(dir, id), ps[i].api, ps[i].raft
		cfg.TLS = controlplane.TLSFiles{CAFile: filepath.Join(pki, "ca.pem"), CertFile: filepath.Join(pki, id+".pem"), KeyFile: filepath.Join(pki, id+".key")}
		cfg.KeyringFile = filepath.Join(dir, "keyring.key")
		cfg.Cluster = controlplane.ClusterConfig{GossipAddr: ps[i].gossip, Join: join, BootstrapExpect: n}
		cfg.AdminTokenHashes = []string{hash}
		cfg.LedgerSigner, cfg.LedgerVerifierKey = signer, vkey
		if base.AgentAddr != "" {
			cfg.AgentAddr, cfg.TLS.CAKeyFile = ps[i].api, filepath.Join(pki, "ca.key")
		}
		if cfg.Logger == nil {
			cfg.Logger = slog.Default()
		}
		s, err := controlplane.New(cfg)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Servers = append(c.Servers, s)
		go s.Serve()
	}
	if err := c.register(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// register applies DevAdminCalls through the leader's API.
func (c *Cluster) register(ctx context.Context) error {
	leader, err := WaitLeader(ctx, c.Servers)
	if err != nil {
		return err
	}
	caPEM, err := c.CAPEM()
	if err != nil {
		return err
	}
	cl := client.New("https://"+leader.Addr().String(), c.Creds.AdminToken)
	if err := cl.TrustCA(caPEM); err != nil {
		return err
	}
	for _, call := range controlplane.DevAdminCalls(c.Creds, filepath.Join(c.Dir, "tools")) {
		if err := cl.Admin(ctx, call.Method, call.Path, call.Body); err != nil {
			return fmt.Errorf("localcluster: %s /v1/admin/%s: %w", call.Method, call.Path, err)
		}
	}
	return nil
}

// CAPEM is the cluster CA's certificate, which clients trust.
func (c *Cluster) CAPEM() ([]byte, error) {
	return os.ReadFile(filepath.Join(c.Dir, "pki", "ca.pem"))
}

// Leader is the server that leads now, or nil.
func (c *Cluster) Leader() *controlplane.Server {
	for _, s := range c.Servers {
		if IsLeader(s) {
			return s
		}
	}
	return nil
}

// Close stops every server.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		s.Close(context.Background())
	}
}

// WaitLeader waits until one of servers leads, and returns it.
func WaitLeader(ctx context.Context, servers []*controlplane.Server) (*controlplane.Server, error) {
	for {
		for _, s := range servers {
			if IsLeader(s) {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("localcluster: the cluster elected no leader")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
