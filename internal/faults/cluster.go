package faults

import (
	"bytes"
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
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// The suite's members: three servers, two agents, and the client namespace
// the suite itself runs in. Ports are fixed: each member has a namespace of
// its own, so nothing else listens there.
var (
	ServerNames = []string{"s1", "s2", "s3"}
	AgentNames  = []string{"a1", "a2"}
	ClientName  = "c"
	// Members and Hosts list every member and the last byte of its address.
	Members = []string{"s1", "s2", "s3", "a1", "a2", "c"}
	Hosts   = []int{1, 2, 3, 11, 12, 100}
)

const (
	apiPort, raftPort, gossipPort = 7000, 7001, 7002
	// Tenant is the tenant the load submits as.
	Tenant = "acme"
)

// Config says where the binaries are and where the cluster keeps its state.
type Config struct {
	Writ, Witness string // the writ binary and the witness tool
	Dir           string // data directories, logs, keys
	// AgentConcurrency is how many tools each agent runs at once.
	AgentConcurrency int
}

// Validate reports a missing binary or directory.
func (c Config) Validate() error {
	for _, p := range []string{c.Writ, c.Witness, c.Dir} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("faults: %w", err)
		}
	}
	if c.AgentConcurrency < 1 {
		return errors.New("faults: AgentConcurrency must be at least 1")
	}
	return nil
}

// Cluster is three `writ server` processes with TLS (a CA made by `writ ca`)
// and two `writ agent` processes enrolled with join tokens, whose allowlist
// holds the witness tool; tenant acme may run it.
type Cluster struct {
	cfg     Config
	Net     *Net
	Servers []*Proc
	Agents  []*Proc
	ca      []byte
	token   string // the admin token
	secret  []byte // the orchestrator key of tenant acme
	// WitnessDir holds one file per idempotency key, a line per run.
	WitnessDir string
	tmpfs      bool // the servers' data directories are on tmpfs (MountData)
}

// NewCluster writes the keys, certificates and configuration of the
// servers; Start starts them.
func NewCluster(cfg Config, n *Net) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, pki := cfg.Dir, filepath.Join(cfg.Dir, "pki")
	c := &Cluster{cfg: cfg, Net: n, WitnessDir: filepath.Join(dir, "witness")}
	if err := os.MkdirAll(c.WitnessDir, 0o777); err != nil {
		return nil, err
	}
	os.Chmod(c.WitnessDir, 0o777) // the agents' process tier may run the tool as nobody
	setup := [][]string{
		{"ca", "create", "--dir", pki},
		{"keygen", "hmac", "--id", "keyring", "--dir", dir},
		{"keygen", "ed25519", "--id", "ledger", "--dir", dir},
		{"keygen", "hmac", "--id", "orch", "--dir", dir},
	}
	for _, s := range ServerNames {
		setup = append(setup, []string{"ca", "issue", "--ca-dir", pki, "--id", s, "--host", n.Addr(s), "--out-dir", pki})
	}
	for _, args := range setup {
		if out, err := exec.Command(cfg.Writ, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("faults: writ %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	b := make([]byte, 16)
	rand.Read(b)
	c.token = hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(c.token))
	var joins []string
	for _, s := range ServerNames {
		joins = append(joins, fmt.Sprintf("%s:%d", n.Addr(s), gossipPort))
	}
	for _, s := range ServerNames {
		a := n.Addr(s)
		conf := map[string]any{
			"id": s, "data_dir": filepath.Join(dir, s),
			"http_addr": fmt.Sprintf("%s:%d", a, apiPort), "raft_addr": fmt.Sprintf("%s:%d", a, raftPort),
			"gossip_addr": fmt.Sprintf("%s:%d", a, gossipPort), "join": joins, "bootstrap_expect": len(ServerNames),
			"agent_addr": fmt.Sprintf("%s:%d", a, apiPort), "agent_heartbeat": "1s",
			"tls": map[string]string{"ca_file": filepath.Join(pki, "ca.pem"), "cert_file": filepath.Join(pki, s+".pem"),
				"key_file": filepath.Join(pki, s+".key"), "ca_key_file": filepath.Join(pki, "ca.key")},
			"keyring_file":       filepath.Join(dir, "keyring.key"),
			"ledger":             map[string]string{"origin": "writ.test/faults", "seed_file": filepath.Join(dir, "ledger.key")},
			"admin_token_hashes": []string{"sha256:" + hex.EncodeToString(sum[:])},
			// A backlog of 64 queued intents, well above what the load
			// keeps queued (one intent per submitter), so that the
			// overload scenario's flood meets the bound within a second.
			"limits": map[string]any{"max_queued": 64},
		}
		raw, _ := json.Marshal(conf)
		path := filepath.Join(dir, s+".json")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return nil, err
		}
		clock := filepath.Join(dir, s+".clock")
		if err := os.WriteFile(clock, []byte("0s"), 0o600); err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, &Proc{Name: s, net: n, bin: cfg.Writ, args: []string{"server", "--config", path},
			env: []string{clockOffsetEnv + "=" + clock}, log: filepath.Join(dir, s+".log")})
	}
	var err error
	if c.ca, err = os.ReadFile(filepath.Join(pki, "ca.pem")); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "orch.key"))
	if err != nil {
		return nil, err
	}
	if c.secret, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw))); err != nil {
		return nil, err
	}
	return c, nil
}

// Start starts the servers, waits for a leader, configures tenant acme,
// the witness tool and a policy that allows it, and starts the agents.
func (c *Cluster) Start(ctx context.Context) error {
	for _, s := range c.Servers {
		if err := s.Start(); err != nil {
			return err
		}
	}
	if _, err := c.WaitLeader(ctx, 60*time.Second); err != nil {
		return err
	}
	manifest := fmt.Sprintf(`{"name":"witness","tier":"process","command":{"path":%q}}`, c.cfg.Witness)
	admin := c.Client(-1)
	for _, call := range []struct{ method, path, body string }{
		{"PUT", "tenants/" + Tenant, `{"run_budget":0}`},
		{"PUT", "tenants/" + Tenant + "/keys/orch", fmt.Sprintf(`{"secret":%q}`, base64.StdEncoding.EncodeToString(c.secret))},
		{"PUT", "policy", "@id(\"all\")\npermit (principal, action == Writ::Action::\"invoke\", resource) when { principal.tenant == \"" + Tenant + "\" };\n"},
		{"PUT", "tools", `{"name":"witness","manifest":` + manifest + `}`},
	} {
		if err := admin.Admin(ctx, call.method, call.path, []byte(call.body)); err != nil {
			return fmt.Errorf("faults: admin %s %s: %w", call.method, call.path, err)
		}
	}
	var servers []string
	for _, s := range ServerNames {
		servers = append(servers, fmt.Sprintf("%s:%d", c.Net.Addr(s), apiPort))
	}
	for _, name := range AgentNames {
		data, tools := filepath.Join(c.cfg.Dir, name), filepath.Join(c.cfg.Dir, name+"-tools")
		for _, d := range []string{data, tools} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
		}
		os.Chmod(tools, 0o755)
		if err := os.WriteFile(filepath.Join(tools, "witness.json"), []byte(manifest), 0o644); err != nil {
			return err
		}
		tok, err := admin.CreateJoinToken(ctx, map[string]string{"pool": "faults"}, time.Hour)
		if err != nil {
			return fmt.Errorf("faults: join token: %w", err)
		}
		// The one-time token goes in a file, never on a command line.
		tokFile := filepath.Join(c.cfg.Dir, name+".token")
		if err := os.WriteFile(tokFile, []byte(tok.Token), 0o600); err != nil {
			return err
		}
		a := &Proc{Name: name, net: c.Net, bin: c.cfg.Writ, log: filepath.Join(c.cfg.Dir, name+".log"),
			args: []string{"agent", "--server", strings.Join(servers, ","), "--data-dir", data, "--tools-dir", tools,
				"--name", name, "--process-read-write", c.WitnessDir, "--concurrency", fmt.Sprint(c.cfg.AgentConcurrency),
				"--token-file", tokFile}}
		c.Agents = append(c.Agents, a)
		if err := a.Start(); err != nil {
			return err
		}
	}
	return c.WaitAgents(ctx, 60*time.Second)
}

// Stop kills every process.
func (c *Cluster) Stop() {
	for _, p := range append(append([]*Proc{}, c.Agents...), c.Servers...) {
		p.Kill()
	}
}

// Client returns an admin client of server i, or of every server with
// failover for -1.
func (c *Cluster) Client(i int) *client.Client {
	var addrs []string
	for k, s := range ServerNames {
		if i < 0 || k == i {
			addrs = append(addrs, fmt.Sprintf("https://%s:%d", c.Net.Addr(s), apiPort))
		}
	}
	cl := client.NewCluster(addrs, c.token)
	cl.TrustCA(c.ca) // the CA was read from the file writ ca wrote
	return cl
}

// Health asks server i for /v1/health; an error for one that does not
// answer 200.
func (c *Cluster) Health(ctx context.Context, i int) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl := c.Client(i)
	defer cl.CloseIdleConnections()
	return cl.Health(ctx)
}

// WaitLeader waits until every running server names the same leader, and
// returns its index.
func (c *Cluster) WaitLeader(ctx context.Context, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		leader, agree := "", true
		for i, s := range c.Servers {
			if s.Crashed() {
				return -1, fmt.Errorf("faults: %s exited: %s", s.Name, Excerpt(s))
			}
			if !s.Running() {
				continue
			}
			h, err := c.Health(ctx, i)
			l, _ := h["leader"].(string)
			if err != nil || l == "" || (leader != "" && l != leader) {
				agree = false
				break
			}
			leader = l
		}
		if agree && leader != "" {
			for i, s := range ServerNames {
				if s == leader {
					return i, nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1, fmt.Errorf("faults: no agreed leader within %s", d)
}

// WaitCaughtUp waits until every running server has applied the leader's
// current index.
func (c *Cluster) WaitCaughtUp(ctx context.Context, leader int, d time.Duration) error {
	h, err := c.Health(ctx, leader)
	if err != nil {
		return err
	}
	want, _ := h["raft_index"].(float64)
	deadline := time.Now().Add(d)
	for i, s := range c.Servers {
		for s.Running() {
			h, err := c.Health(ctx, i)
			if got, _ := h["raft_index"].(float64); err == nil && got >= want {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("faults: %s did not catch up to index %v within %s", s.Name, want, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Nodes reads the nodes by name, from any server that answers.
func (c *Cluster) Nodes(ctx context.Context) (map[string]protocol.NodeView, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nodes, err := c.Client(-1).Nodes(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string]protocol.NodeView{}
	for _, n := range nodes {
		m[n.Name] = n
	}
	return m, nil
}

// WaitAgents waits until every agent's node is ready.
func (c *Cluster) WaitAgents(ctx context.Context, d time.Duration) error {
	var last map[string]protocol.NodeView
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		nodes, err := c.Nodes(ctx)
		if err != nil {
			continue
		}
		last = nodes
		ready := true
		for _, a := range c.Agents {
			if nodes[a.Name].Status != "ready" {
				ready = false
			}
		}
		if ready {
			return nil
		}
	}
	return fmt.Errorf("faults: the agents' nodes are not ready within %s: %+v", d, last)
}

// WaitGossip waits until every server's gossip sees every voter alive
// (/v1/health's peers): a follower that holds the leader dead cannot relay
// a node's result to it.
func (c *Cluster) WaitGossip(ctx context.Context, d time.Duration) error {
	var dead []string
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		dead = nil
		for i, s := range c.Servers {
			h, err := c.Health(ctx, i)
			if err != nil {
				dead = append(dead, s.Name+": no health")
				continue
			}
			peers, _ := h["peers"].([]any)
			if len(peers) != len(c.Servers) {
				dead = append(dead, fmt.Sprintf("%s: %d peers", s.Name, len(peers)))
			}
			for _, p := range peers {
				m, _ := p.(map[string]any)
				if alive, _ := m["alive"].(bool); !alive {
					dead = append(dead, fmt.Sprintf("%s holds %v dead", s.Name, m["id"]))
				}
			}
		}
		if len(dead) == 0 {
			return nil
		}
	}
	return fmt.Errorf("faults: the servers' gossip did not heal within %s: %v", d, dead)
}

// Runs counts the witness tool's runs for an idempotency key.
func (c *Cluster) Runs(key string) int {
	b, _ := os.ReadFile(filepath.Join(c.WitnessDir, key))
	return bytes.Count(b, []byte("ran "))
}

// Excerpt returns what process p's log says of a panic or a fatal error,
// or else its last lines.
func Excerpt(p *Proc) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return strings.Join(lines[i:min(len(lines), i+12)], "\n")
		}
	}
	return Tail(p, 12)
}

// Tail returns the last n lines of process p's log.
func Tail(p *Proc, n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
