package main_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/ledger"
)

// testCluster is three `writ server` processes on loopback that find each
// other with memberlist (bootstrap_expect 3), and tenant acme with an
// orchestrator key and the tool echo. Each server takes node sessions on its
// API port over UDP, with a 1 s heartbeat, so that a session whose server
// died ends within 3 s. No policy is installed, so every intent would end
// denied, until startAgents (cluster_agents_test.go) allows tenant acme
// every tool, registers the witness tool and starts node agents to run it.
type testCluster struct {
	t      *testing.T
	dir    string
	ca     []byte
	token  string
	secret []byte
	vkey   string
	srv    []*testServer
	// With agents: their processes, and the directory the witness tool
	// counts its runs in (one file per idempotency key).
	agents  []*clusterAgent
	witness string
}

type testServer struct {
	id, api, config, log string
	cmd                  *exec.Cmd
}

func startTestCluster(t *testing.T) *testCluster {
	t.Helper()
	return startTestClusterWith(t, nil)
}

// startTestClusterWith is startTestCluster with each server's configuration
// file changed by mod (nil: as it is).
func startTestClusterWith(t *testing.T, mod func(cfg map[string]any)) *testCluster {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	c := &testCluster{t: t, dir: dir}
	ids := []string{"s1", "s2", "s3"}
	setup := [][]string{
		{"ca", "create", "--dir", pki},
		{"keygen", "hmac", "--id", "keyring", "--dir", dir},
		{"keygen", "ed25519", "--id", "ledger", "--dir", dir},
		{"keygen", "hmac", "--id", "orch", "--dir", dir},
	}
	for _, id := range ids {
		setup = append(setup, []string{"ca", "issue", "--ca-dir", pki, "--id", id, "--host", "127.0.0.1", "--out-dir", pki})
	}
	for _, args := range setup {
		if out, code := run(t, "", args...); code != 0 {
			t.Fatalf("writ %s: %q exit %d", strings.Join(args, " "), out, code)
		}
	}
	b := make([]byte, 16)
	rand.Read(b)
	c.token = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(c.token))
	var gossip []string
	type ports struct{ api, raft, gossip string }
	var ps []ports
	for range ids {
		p := ports{freePort(t), freePort(t), freePort(t)}
		ps = append(ps, p)
		gossip = append(gossip, p.gossip)
	}
	for i, id := range ids {
		cfg := map[string]any{
			"id": id, "data_dir": filepath.Join(dir, id), "http_addr": ps[i].api, "raft_addr": ps[i].raft,
			"gossip_addr": ps[i].gossip, "join": gossip, "bootstrap_expect": 3,
			"tls": map[string]string{"ca_file": filepath.Join(pki, "ca.pem"), "cert_file": filepath.Join(pki, id+".pem"),
				"key_file": filepath.Join(pki, id+".key"), "ca_key_file": filepath.Join(pki, "ca.key")},
			"agent_addr": ps[i].api, "agent_heartbeat": "1s",
			"keyring_file":       filepath.Join(dir, "keyring.key"),
			"ledger":             map[string]string{"origin": "writ.test/cluster", "seed_file": filepath.Join(dir, "ledger.key")},
			"admin_token_hashes": []string{"sha256:" + hex.EncodeToString(sum[:])},
		}
		if mod != nil {
			mod(cfg)
		}
		raw, _ := json.Marshal(cfg)
		s := &testServer{id: id, api: ps[i].api, config: writeFile(t, dir, id+".json", string(raw)), log: filepath.Join(dir, id+".log")}
		c.srv = append(c.srv, s)
	}
	for i := range c.srv {
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.srv {
			if s.cmd != nil && s.cmd.Process != nil {
				s.cmd.Process.Signal(syscall.SIGCONT)
				s.cmd.Process.Kill()
				s.cmd.Wait()
			}
		}
		if t.Failed() {
			for _, s := range c.srv {
				b, _ := os.ReadFile(s.log)
				lines := strings.Split(string(b), "\n")
				t.Logf("%s log (last lines):\n%s", s.id, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
	})
	c.ca, _ = os.ReadFile(filepath.Join(pki, "ca.pem"))
	secretB64, _ := os.ReadFile(filepath.Join(dir, "orch.key"))
	c.secret, _ = base64.StdEncoding.DecodeString(strings.TrimSpace(string(secretB64)))
	c.waitLeader(30 * time.Second)
	admin := c.client(-1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "tenants/acme", `{"run_budget":0}`},
		{"PUT", "tenants/acme/keys/orch", fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(c.secret))},
		{"PUT", "tools", `{"name":"echo","manifest":{"name":"echo","tier":"wasm","module":"/opt/echo.wasm"}}`},
	} {
		if err := admin.Admin(ctx, call.method, call.path, []byte(call.body)); err != nil {
			t.Fatalf("admin %s %s: %v", call.method, call.path, err)
		}
	}
	return c
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	s := c.srv[i]
	logf, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	s.cmd = exec.Command(writBin, "server", "--config", s.config)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
}

// client returns a client of server i, or of every server (failover) for -1.
func (c *testCluster) client(i int) *client.Client {
	var addrs []string
	for k, s := range c.srv {
		if i < 0 || k == i {
			addrs = append(addrs, "https://"+s.api)
		}
	}
	cl := client.NewCluster(addrs, c.token)
	if err := cl.TrustCA(c.ca); err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// health asks server i; an error for one that does not answer.
func (c *testCluster) health(i int) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.client(i).Health(ctx)
}

// waitLeader waits until every running server names the same leader, and
// returns its index.
func (c *testCluster) waitLeader(d time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		leader, agree := "", true
		for i, s := range c.srv {
			if s.cmd == nil {
				continue
			}
			h, err := c.health(i)
			l, _ := h["leader"].(string)
			if err != nil || l == "" || (leader != "" && l != leader) {
				agree = false
				break
			}
			leader = l
		}
		if agree && leader != "" {
			for i, s := range c.srv {
				if s.id == leader {
					return i
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no agreed leader within %s", d)
	return -1
}

// kill stops server i with SIGKILL.
func (c *testCluster) kill(i int) {
	s := c.srv[i]
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// exists reports whether server i holds intent id as an admitted attempt
// (admin read). An attempt refused for an idempotency conflict is kept too,
// with its receipt, but admitted nothing: it does not count.
func (c *testCluster) exists(i int, id string) (bool, error) {
	// A deadline for a server that does not answer, not a speed: a loaded
	// machine (CI runs every package at once under -race) may take seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.client(i).Intent(ctx, id, 0)
	var ae *client.Error
	switch {
	case err == nil:
		return r.Error == nil || r.Error.Code != "idempotency_conflict", nil
	case errors.As(err, &ae) && ae.Code == "not_found":
		return false, nil
	}
	return false, err
}

// waitIndex waits until every running server has applied at least the
// leader's current index.
func (c *testCluster) waitCaughtUp(leader int) {
	c.t.Helper()
	h, err := c.health(leader)
	if err != nil {
		c.t.Fatal(err)
	}
	want, _ := h["raft_index"].(float64)
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range c.srv {
		for s.cmd != nil {
			h, err := c.health(i)
			if got, _ := h["raft_index"].(float64); err == nil && got >= want {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s did not catch up to index %v", s.id, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// checkLedgers requires every running server's latest checkpoint to verify
// with the cluster's key, equal roots at equal sizes, and each smaller one
// to be consistent with each larger one (GET /v1/ledger/consistency).
func (c *testCluster) checkLedgers() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type cp struct {
		i int
		c ledger.Checkpoint
	}
	var cps []cp
	for i, s := range c.srv {
		if s.cmd == nil {
			continue
		}
		got, err := c.client(i).Checkpoint(ctx)
		if err != nil {
			c.t.Fatalf("%s checkpoint: %v", s.id, err)
		}
		v, err := ledger.NewVerifier(got.VerifierKey)
		if err != nil {
			c.t.Fatal(err)
		}
		parsed, err := ledger.OpenCheckpoint([]byte(got.Checkpoint), v)
		if err != nil {
			c.t.Fatalf("%s checkpoint does not verify: %v", s.id, err)
		}
		if c.vkey == "" {
			c.vkey = got.VerifierKey
		} else if got.VerifierKey != c.vkey {
			c.t.Fatalf("%s signs checkpoints with %s, another server with %s", s.id, got.VerifierKey, c.vkey)
		}
		cps = append(cps, cp{i, parsed})
	}
	for _, a := range cps {
		for _, b := range cps {
			switch {
			case a.c.Size == b.c.Size && a.c.Root != b.c.Root:
				c.t.Fatalf("%s and %s: different roots at size %d", c.srv[a.i].id, c.srv[b.i].id, a.c.Size)
			case a.c.Size < b.c.Size:
				hashes, err := c.client(b.i).Consistency(ctx, a.c.Size, b.c.Size)
				if err != nil {
					c.t.Fatal(err)
				}
				proof, err := ledger.ParseProof(hashes)
				if err != nil {
					c.t.Fatal(err)
				}
				if err := ledger.CheckConsistency(a.c, b.c, proof); err != nil {
					c.t.Fatalf("%s's checkpoint (size %d) is not consistent with %s's (size %d): %v", c.srv[a.i].id, a.c.Size, c.srv[b.i].id, b.c.Size, err)
				}
			}
		}
	}
}
