package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/freeport"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/internal/simagent"
	"github.com/writhq/writ/protocol"
)

// loadRig is one setup of writ bench load, running in child processes: writ
// dev (server and agent in one process), or three writ server processes and
// one writ agent. The bench submits as the dev tenant's orchestrator, and a
// simulated agent in the bench's own process answers the intents targeted
// at it at once.
type loadRig struct {
	setup   string // "dev" or "cluster"
	dir     string
	procs   loadProcs
	apis    []string // the servers' API URLs
	caPEM   []byte   // the cluster CA; nil for writ dev (plain HTTP)
	tlsCert [2]string
	tenant  string
	keyID   string
	secret  []byte
	admin   *client.Client
	clients []*client.Client // one per server, as orchestrators spread
	agent   string           // the real agent's node id
	sim     *simagent.Agent
	simStop func()
}

// loadRigNames are the setups writ bench load runs.
var loadRigNames = []string{"dev", "cluster"}

func startLoadRig(ctx context.Context, setup, dir, profDir, echoWasm string) (*loadRig, error) {
	r := &loadRig{setup: setup, dir: dir}
	var err error
	switch setup {
	case "dev":
		err = r.startDev(ctx, profDir, filepath.Dir(echoWasm))
	case "cluster":
		err = r.startCluster(ctx, profDir, filepath.Dir(echoWasm))
	default:
		err = fmt.Errorf("unknown setup %q", setup)
	}
	if err == nil {
		err = r.startSim(ctx)
	}
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("%s: %w", setup, err)
	}
	return r, nil
}

// startDev starts writ dev and waits for it to be ready (its agent
// connected).
func (r *loadRig) startDev(ctx context.Context, profDir, toolsDir string) error {
	addr, err := freeport.Loopback()
	if err != nil {
		return err
	}
	raftAddr, err := freeport.Loopback()
	if err != nil {
		return err
	}
	data := filepath.Join(r.dir, "dev")
	p, err := startLoadProc(r.dir, profDir, "dev", false, "dev", "--data-dir", data, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
	if err != nil {
		return err
	}
	r.procs = append(r.procs, p)
	var creds *controlplane.DevCredentials
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if err := p.exited(); err != nil {
			return err
		}
		if c, err := controlplane.LoadDevCredentials(filepath.Join(data, "dev.json")); err == nil {
			creds = c
			break
		}
		if time.Now().After(deadline) {
			return errors.New("writ dev wrote no dev.json within 2 minutes")
		}
	}
	r.apis = []string{"http://" + addr}
	if err := r.useCredentials(creds, client.New(r.apis[0], creds.AdminToken)); err != nil {
		return err
	}
	return r.waitAgent(ctx, "dev-agent")
}

// startCluster makes a cluster CA, keys and credentials as deploy/cluster.sh
// does, starts three writ server processes, registers the dev tenant, tools
// and policy (writ dev register), and starts writ agent with a join token.
func (r *loadRig) startCluster(ctx context.Context, profDir, toolsDir string) error {
	pki := filepath.Join(r.dir, "pki")
	ids := []string{"s1", "s2", "s3"}
	type ports struct{ api, raft, gossip string }
	var ps []ports
	var apis, gossip, agentServers []string
	for range ids {
		var p ports
		for _, a := range []*string{&p.api, &p.raft, &p.gossip} {
			var err error
			if *a, err = freeport.Loopback(); err != nil {
				return err
			}
		}
		ps = append(ps, p)
		apis = append(apis, "https://"+p.api)
		gossip = append(gossip, p.gossip)
		agentServers = append(agentServers, p.api)
	}
	steps := [][]string{
		{"ca", "create", "--dir", pki},
		{"keygen", "hmac", "--id", "keyring", "--dir", r.dir},
	}
	for _, id := range ids {
		steps = append(steps, []string{"ca", "issue", "--ca-dir", pki, "--id", id, "--host", "127.0.0.1", "--out-dir", pki})
	}
	for _, args := range steps {
		if _, err := runSelf(args...); err != nil {
			return err
		}
	}
	credsFile := filepath.Join(r.dir, "dev.json")
	out, err := runSelf("dev", "credentials", "--out", credsFile, "--ca", filepath.Join(pki, "ca.pem"), "--addr", strings.Join(apis, ","))
	if err != nil {
		return err
	}
	var made struct {
		Origin string `json:"ledger_origin"`
		Hash   string `json:"admin_token_hash"`
	}
	if err := json.Unmarshal(out, &made); err != nil {
		return fmt.Errorf("writ dev credentials: %w", err)
	}
	for i, id := range ids {
		cfg := map[string]any{
			"id": id, "data_dir": filepath.Join(r.dir, id), "http_addr": ps[i].api, "raft_addr": ps[i].raft,
			"gossip_addr": ps[i].gossip, "join": gossip, "bootstrap_expect": len(ids), "agent_addr": ps[i].api,
			"tls": map[string]string{"ca_file": filepath.Join(pki, "ca.pem"), "cert_file": filepath.Join(pki, id+".pem"),
				"key_file": filepath.Join(pki, id+".key"), "ca_key_file": filepath.Join(pki, "ca.key")},
			"keyring_file":       filepath.Join(r.dir, "keyring.key"),
			"ledger":             map[string]string{"origin": made.Origin, "seed_file": filepath.Join(r.dir, "ledger.key")},
			"admin_token_hashes": []string{made.Hash},
		}
		raw, _ := json.Marshal(cfg)
		file := filepath.Join(r.dir, id+".json")
		if err := os.WriteFile(file, raw, 0o600); err != nil {
			return err
		}
		p, err := startLoadProc(r.dir, profDir, id, false, "server", "--config", file)
		if err != nil {
			return err
		}
		r.procs = append(r.procs, p)
	}
	r.apis = apis
	allow := filepath.Join(r.dir, "agent-tools")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := r.procs.exited(); err != nil {
			return err
		}
		_, err := runSelf("dev", "register", "--credentials", credsFile, "--allowlist", allow, "--tools-dir", toolsDir)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("registering: %w", err)
		}
	}
	if r.caPEM, err = os.ReadFile(filepath.Join(pki, "ca.pem")); err != nil {
		return err
	}
	r.tlsCert = [2]string{filepath.Join(pki, "s1.pem"), filepath.Join(pki, "s1.key")}
	creds, err := controlplane.LoadDevCredentials(credsFile)
	if err != nil {
		return err
	}
	admin := client.NewCluster(apis, creds.AdminToken)
	if err := admin.TrustCA(r.caPEM); err != nil {
		return err
	}
	if err := r.useCredentials(creds, admin); err != nil {
		return err
	}
	tok, err := admin.CreateJoinToken(ctx, map[string]string{"bench": "load"}, 10*time.Minute)
	if err != nil {
		return err
	}
	tokFile := filepath.Join(r.dir, "agent.token")
	if err := secretfile.Write(tokFile, []byte(tok.Token+"\n")); err != nil {
		return err
	}
	// The agent runs 8 tools at once, as writ dev's agent does.
	p, err := startLoadProc(r.dir, profDir, "agent", false, "agent", "--server", strings.Join(agentServers, ","),
		"--data-dir", filepath.Join(r.dir, "agent"), "--tools-dir", allow, "--name", "bench-agent",
		"--token-file", tokFile, "--concurrency", "8")
	if err != nil {
		return err
	}
	r.procs = append(r.procs, p)
	return r.waitAgent(ctx, "bench-agent")
}

// runSelf runs one of this binary's commands to its end and returns its
// stdout.
func runSelf(args ...string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = withoutEnv(os.Environ(), cpuProfileEnv, "WRIT_SERVER", "WRIT_TOKEN", "WRIT_TOKEN_FILE", "WRIT_CA")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("writ %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// useCredentials keeps the orchestrator's key and makes the submitting
// clients.
func (r *loadRig) useCredentials(creds *controlplane.DevCredentials, admin *client.Client) error {
	secret, err := decodeSecret(creds.Orchestrator.Secret)
	if err != nil {
		return err
	}
	r.tenant, r.keyID, r.secret, r.admin = creds.Tenant, creds.Orchestrator.KeyID, secret, admin
	for _, api := range r.apis {
		c := client.New(api, "")
		if r.caPEM != nil {
			if err := c.TrustCA(r.caPEM); err != nil {
				return err
			}
		}
		c.NoProofWait = true
		r.clients = append(r.clients, c)
	}
	return nil
}

// waitAgent waits until the node named name is ready, and keeps its id.
func (r *loadRig) waitAgent(ctx context.Context, name string) error {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if err := r.procs.exited(); err != nil {
			return err
		}
		nodes, err := r.admin.Nodes(ctx)
		for _, n := range nodes {
			if n.Name == name && n.Status == "ready" {
				r.agent = n.ID
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not ready within 2 minutes (%v)", name, err)
		}
	}
}

// startSim enrolls a simulated agent with a join token and connects it to
// the first server: it answers every dispatch at once, with no tool run, so
// that the Writ processes' CPU is the control plane's own.
func (r *loadRig) startSim(ctx context.Context) error {
	tr := &http.Transport{}
	if r.caPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(r.caPEM)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	hc := &http.Client{Timeout: time.Minute, Transport: tr}
	tok, err := r.admin.CreateJoinToken(ctx, map[string]string{"bench": "sim"}, 10*time.Minute)
	if err != nil {
		return err
	}
	// Enrolled on a server that has the enrollment applied when the
	// session starts: the one that answers (the leader, or a follower
	// forwarding to it), tried in turn.
	var a *simagent.Agent
	var api string
	for deadline := time.Now().Add(time.Minute); a == nil; time.Sleep(100 * time.Millisecond) {
		for _, api = range r.apis {
			if a, err = simagent.Enroll(ctx, hc, api, tok.Token, "bench-sim"); err == nil {
				break
			}
		}
		if a == nil && time.Now().After(deadline) {
			return fmt.Errorf("enrolling the simulated agent: %w", err)
		}
	}
	tools, err := fleetTools(ctx, hc, api)
	if err != nil {
		return err
	}
	host := api[strings.Index(api, "://")+3:]
	udp, err := net.ResolveUDPAddr("udp", host)
	if err != nil {
		return err
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	qt := &quic.Transport{Conn: pc}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = a.Connect(cctx, qt, udp, tools, &simagent.ServerKeys{})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			qt.Close()
			return fmt.Errorf("connecting the simulated agent: %w", err)
		}
	}
	r.sim, r.simStop = a, func() { a.Close(); qt.Close() }
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if n, err := r.admin.Node(ctx, a.ID); err == nil && n.Status == "ready" {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the simulated agent is not ready within a minute")
		}
	}
}

// submit signs one echo intent for node and submits it through server
// i%len, waiting for its final state; anything but completed is an error.
func (r *loadRig) submit(ctx context.Context, i int, id, params, node string) error {
	raw := signBenchIntent(r.tenant, r.keyID, r.secret, id, params, &protocol.Target{Node: node})
	k := i % len(r.clients)
	if k < 0 {
		k += len(r.clients)
	}
	resp, err := r.clients[k].Submit(ctx, raw, nil, time.Minute)
	if err != nil {
		return err
	}
	if resp.State != "completed" {
		return fmt.Errorf("intent %s ended %s: %+v", id, resp.State, resp.Error)
	}
	return nil
}

// runID is a random tag that keeps the intent ids of runs apart.
func runID() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "0"
	}
	return hex.EncodeToString(b)
}

func (r *loadRig) stop() {
	if r.simStop != nil {
		r.simStop()
	}
	// The agent first, then the servers together: as an operator stops
	// them.
	var servers loadProcs
	for _, p := range r.procs {
		if p.role == "agent" {
			p.stop()
		} else {
			servers = append(servers, p)
		}
	}
	for _, p := range servers {
		p.signal()
	}
	for _, p := range servers {
		p.stop()
	}
}
