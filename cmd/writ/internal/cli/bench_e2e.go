package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/internal/simagent"
	"github.com/writhq/writ/nodeagent"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/tiers"
)

type e2eOptions struct {
	n, paramBytes, sandboxN int
	echoWasm                string
	prof                    benchProfiles // of the real agent's measurement only
}

func newBenchE2E(e *env) *cobra.Command {
	var o e2eOptions
	cmd := &cobra.Command{
		Use:   "e2e [--n N] [--params-bytes 512] [--echo-wasm FILE]",
		Short: "Submit-to-result latency of the echo tool through a 3-server cluster and one agent, beside a raw QUIC round trip",
		Long: `Start 3 servers in this process on loopback (Raft over mutual TLS, the API over
TLS, node sessions over QUIC: the servers of writ server) and one node agent
(the agent of writ agent: enrolled with a join token, its allowlist holding the
echo tool, its journal and outbox on disk), then submit N signed intents of the
echo tool, in turn to each server as an orchestrator would (a follower forwards
to the leader), each waiting until its result is recorded. Printed beside it,
from the same run: a raw QUIC round trip with mutual TLS of a frame of the same
size (the floor under any dispatch), and the start-to-end time of the echo tool
in the wasm sandbox tier it runs in (writ bench sandbox), which the latency
target adds.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.n < 1 || o.n > 1_000_000 || o.paramBytes < 16 || o.paramBytes > 64<<10 || o.sandboxN < 1 {
				return errors.New("--n must be 1-1000000, --params-bytes 16-65536, --sandbox-n positive")
			}
			if o.echoWasm == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.echoWasm = filepath.Join(filepath.Dir(exe), "tools", "echo.wasm")
			}
			r, err := benchE2E(e, o)
			if err != nil {
				return err
			}
			if e.output == "json" {
				return e.printJSON(r)
			}
			printE2E(e, r)
			return nil
		},
	}
	cmd.Flags().IntVar(&o.n, "n", 300, "intents timed")
	cmd.Flags().IntVar(&o.paramBytes, "params-bytes", 512, "size of each intent's params")
	cmd.Flags().IntVar(&o.sandboxN, "sandbox-n", 50, "runs of the sandbox start measurement")
	cmd.Flags().StringVar(&o.echoWasm, "echo-wasm", "", "the echo tool as a wasip1 module (default: tools/echo.wasm beside writ)")
	cmd.Flags().StringVar(&o.prof.cpu, "cpuprofile", "", "write a CPU profile of the real agent's measurement to this file")
	cmd.Flags().StringVar(&o.prof.block, "blockprofile", "", "write a profile of where goroutines blocked during the real agent's measurement to this file")
	cmd.Flags().StringVar(&o.prof.allocs, "memprofile", "", "write a profile of allocations to this file after the real agent's measurement")
	return cmd
}

type e2eReport struct {
	N          int     `json:"n"`
	ParamBytes int     `json:"params_bytes"`
	Procs      int     `json:"gomaxprocs"`
	Tier       string  `json:"tier"`
	RTT        latency `json:"quic_rtt"`
	// SandboxStart is the tier's start-to-end median for the echo tool, and
	// SandboxRaw its raw baseline (a wazero instantiate and call).
	SandboxStart time.Duration `json:"sandbox_start_p50_ns"`
	SandboxRaw   time.Duration `json:"sandbox_raw_p50_ns"`
	// Fsync is a 4 KiB write and fsync in the data directory: every intent
	// waits for several (Raft's log on a majority, the receipt log, the
	// agent's journal and outbox).
	Fsync latency `json:"fsync"`
	// RaftApply is one entry the size of an admission's through Raft on the
	// leader, one at a time: an intent commits two (admission, result).
	RaftApply latency `json:"raft_apply"`
	// Sim: the same submissions answered at once by a simulated agent whose
	// session is with a follower: the control plane's own share.
	Sim         latency `json:"e2e_sim_agent"`
	SimLeader   latency `json:"e2e_sim_agent_via_leader"`
	SimFollower latency `json:"e2e_sim_agent_via_follower"`
	// The simulated agent's runs in two parts: from submission until the
	// dispatch reaches the agent, and from then until the submitter has the
	// recorded result.
	SimToDispatch latency `json:"e2e_sim_to_dispatch"`
	SimToAnswer   latency `json:"e2e_sim_dispatch_to_answer"`
	// With the real agent and the sandbox.
	All      latency `json:"e2e"`
	Leader   latency `json:"e2e_via_leader"`
	Follower latency `json:"e2e_via_follower"`
	// SessionOnLeader is whether the real agent's session is with the leader.
	SessionOnLeader bool `json:"session_on_leader"`
}

func benchE2E(e *env, o e2eOptions) (*e2eReport, error) {
	if _, err := os.Stat(o.echoWasm); err != nil {
		return nil, fmt.Errorf("the echo tool: %w (make build puts it in bin/tools)", err)
	}
	ctx := context.Background()
	r := &e2eReport{N: o.n, ParamBytes: o.paramBytes, Procs: runtimeProcs(), Tier: sandbox.TierWasm}
	params := `{"msg":"` + strings.Repeat("x", o.paramBytes-10) + `"}`
	rtt, err := localcluster.QUICRoundTrips(ctx, max(o.n, 200), len(params)+400)
	if err != nil {
		return nil, fmt.Errorf("raw QUIC round trips: %w", err)
	}
	r.RTT = percentiles(rtt)
	sb := tiers.Bench(ctx, tiers.BenchConfig{Tiers: tiers.DefaultConfig(), Names: []string{sandbox.TierWasm}, N: o.sandboxN, EchoWasm: o.echoWasm})
	if len(sb) != 1 || sb[0].Error != "" {
		return nil, fmt.Errorf("the wasm tier's start time: %+v", sb)
	}
	r.SandboxStart, r.SandboxRaw = sb[0].P50, sb[0].RawP50

	dir, err := os.MkdirTemp("", "writ-bench-e2e-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ec, stop, err := startEchoCluster(ctx, e, dir, o.echoWasm)
	if err != nil {
		return nil, err
	}
	defer stop()
	servers, creds, leader, node, caPEM := ec.servers, ec.creds, ec.leader, ec.node, ec.caPEM
	secret, err := decodeSecret(creds.Orchestrator.Secret)
	if err != nil {
		return nil, err
	}
	var clients []*client.Client
	for _, s := range servers {
		c := client.New("https://"+s.Addr().String(), "")
		if err := c.TrustCA(caPEM); err != nil {
			return nil, err
		}
		c.NoProofWait = true
		clients = append(clients, c)
		if v, ok := s.Node(node); ok && localcluster.IsLeader(s) {
			r.SessionOnLeader = v.Server == localcluster.ID(s)
		}
	}
	if r.Fsync, err = fsyncLatency(dir, max(o.n/2, 50)); err != nil {
		return nil, err
	}
	entry, err := localcluster.AdmitEntrySize(signBenchIntent(creds.Tenant, creds.Orchestrator.KeyID, secret, "e2e-size", params, nil))
	if err != nil {
		return nil, err
	}
	var applies []time.Duration
	for range max(o.n/2, 50) {
		t := time.Now()
		if err := localcluster.ApplyNoop(ctx, leader, entry, false); err != nil {
			return nil, err
		}
		applies = append(applies, time.Since(t))
	}
	r.RaftApply = percentiles(applies)
	var dispatched atomic.Int64 // when the simulated agent last received a dispatch
	sim, stopSim, err := startSimAgent(ctx, leader, servers, caPEM, func() { dispatched.Store(time.Now().UnixNano()) })
	if err != nil {
		return nil, err
	}
	defer stopSim()
	target := &protocol.Target{Node: node}
	var toDispatch, toAnswer []time.Duration
	submit := func(i int, tag string) (time.Duration, error) {
		raw := signBenchIntent(creds.Tenant, creds.Orchestrator.KeyID, secret, fmt.Sprintf("e2e-%s-%d", tag, i), params, target)
		start := time.Now()
		resp, err := clients[i%len(clients)].Submit(ctx, raw, nil, 30*time.Second)
		took := time.Since(start)
		if at := time.Unix(0, dispatched.Load()); tag == "sim" && at.After(start) {
			toDispatch = append(toDispatch, at.Sub(start))
			toAnswer = append(toAnswer, start.Add(took).Sub(at))
		}
		if err == nil && resp.State != "completed" {
			err = fmt.Errorf("ended %s: %+v", resp.State, resp.Error)
		}
		if err != nil {
			return 0, fmt.Errorf("intent %s-%d: %w", tag, i, err)
		}
		return took, nil
	}
	for i := range 3 * len(clients) { // warm up: connections, the module cache
		if _, err := submit(i, "warm"); err != nil {
			return nil, err
		}
	}
	measure := func(tag string) (all, viaLeader, viaFollower latency, err error) {
		var a, l, f []time.Duration
		for i := range o.n {
			d, err := submit(i, tag)
			if err != nil {
				return all, viaLeader, viaFollower, err
			}
			a = append(a, d)
			if localcluster.IsLeader(servers[i%len(servers)]) {
				l = append(l, d)
			} else {
				f = append(f, d)
			}
		}
		return percentiles(a), percentiles(l), percentiles(f), nil
	}
	target = &protocol.Target{Node: sim.ID}
	if r.Sim, r.SimLeader, r.SimFollower, err = measure("sim"); err != nil {
		return nil, err
	}
	r.SimToDispatch, r.SimToAnswer = percentiles(toDispatch), percentiles(toAnswer)
	target = &protocol.Target{Node: node}
	stopProf, err := o.prof.start()
	if err != nil {
		return nil, err
	}
	r.All, r.Leader, r.Follower, err = measure("agent")
	stopProf()
	if err != nil {
		return nil, err
	}
	return r, nil
}

// startSimAgent enrolls a simulated agent (internal/simagent) and connects it
// to a follower: dispatches pushed by a follower, results forwarded to the
// leader.
func startSimAgent(ctx context.Context, leader *controlplane.Server, servers []*controlplane.Server, caPEM []byte, onDispatch func()) (*simagent.Agent, func(), error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	tok, aerr := leader.CreateJoinToken(ctx, map[string]string{"bench": "sim"}, 10*time.Minute)
	if aerr != nil {
		return nil, nil, aerr
	}
	a, err := simagent.Enroll(ctx, hc, "https://"+leader.Addr().String(), tok.Token, "bench-sim")
	if err != nil {
		return nil, nil, err
	}
	var follower *controlplane.Server
	for _, s := range servers {
		if !localcluster.IsLeader(s) {
			follower = s
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := follower.Node(a.ID); ok {
			break // the follower has applied the enrollment
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.New("the follower never learnt of the simulated agent's enrollment")
		}
	}
	udp, err := net.ResolveUDPAddr("udp", follower.AgentAddr())
	if err != nil {
		return nil, nil, err
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	tools, err := fleetTools(ctx, hc, "https://"+leader.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	tr := &quic.Transport{Conn: pc}
	a.OnDispatch = onDispatch
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Connect(cctx, tr, udp, tools, &simagent.ServerKeys{}); err != nil {
		tr.Close()
		return nil, nil, err
	}
	return a, func() { a.Close(); tr.Close() }, nil
}

// fsyncLatency times n writes of 4 KiB, each followed by an fsync, to a file
// in dir.
func fsyncLatency(dir string, n int) (latency, error) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		return latency{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var d []time.Duration
	for range n {
		t := time.Now()
		if _, err := f.Write(buf); err != nil {
			return latency{}, err
		}
		if err := f.Sync(); err != nil {
			return latency{}, err
		}
		d = append(d, time.Since(t))
	}
	return percentiles(d), nil
}

// startBenchAgent enrolls and runs a node agent whose allowlist holds the
// dev tools as localcluster.Start registered them, and returns its node id
// once a server has it ready.
func startBenchAgent(ctx context.Context, leader *controlplane.Server, dir string, servers []string, log *slog.Logger, done chan error) (string, error) {
	allow := filepath.Join(dir, "agent-tools")
	if err := os.MkdirAll(allow, 0o700); err != nil {
		return "", err
	}
	for name, m := range controlplane.DevManifests(filepath.Join(dir, "tools")) {
		if err := secretfile.Write(filepath.Join(allow, name+".json"), m); err != nil {
			return "", err
		}
	}
	tok, aerr := leader.CreateJoinToken(ctx, map[string]string{"bench": "e2e"}, 10*time.Minute)
	if aerr != nil {
		return "", aerr
	}
	cfg := nodeagent.DefaultConfig()
	cfg.Servers, cfg.DataDir, cfg.ToolsDir, cfg.Concurrency = servers, filepath.Join(dir, "agent"), allow, 8
	ready := make(chan string, 1)
	go func() {
		done <- nodeagent.Run(ctx, nodeagent.RunConfig{Config: cfg, Token: tok.Token, Name: "bench-agent",
			Tiers: tiers.DefaultConfig(), Logger: log, Ready: func(node string) { ready <- node }})
	}()
	var node string
	select {
	case node = <-ready:
	case err := <-done:
		done <- err
		return "", fmt.Errorf("the agent did not start: %w", err)
	case <-time.After(time.Minute):
		return "", errors.New("the agent did not start within a minute")
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, ok := leader.Node(node); ok && n.Status == "ready" {
			return node, nil
		}
	}
	return "", errors.New("the agent did not connect within 30 s")
}

func printE2E(e *env, r *e2eReport) {
	w := func(format string, a ...any) { fmt.Fprintf(e.out, format+"\n", a...) }
	where := "a follower"
	if r.SessionOnLeader {
		where = "the leader"
	}
	w("writ bench e2e: 3 servers and one agent on loopback (its session with %s), %d echo intents with %d-byte params, GOMAXPROCS %d",
		where, r.N, r.ParamBytes, r.Procs)
	w("%-36s %10s %10s %10s", "", "p50", "p99", "max")
	row := func(name string, l latency) {
		if l.N == 0 {
			return
		}
		w("%-36s %10s %10s %10s", name, l.P50.Round(time.Microsecond), l.P99.Round(time.Microsecond), l.Max.Round(time.Microsecond))
	}
	row("raw QUIC round trip (baseline)", r.RTT)
	row("4 KiB write + fsync (baseline)", r.Fsync)
	row("Raft apply on the leader (baseline)", r.RaftApply)
	w("%-36s %10s   (raw wazero instantiate and call %s)", "sandbox start, "+r.Tier+" tier", r.SandboxStart.Round(time.Microsecond), r.SandboxRaw.Round(time.Microsecond))
	row("simulated agent on a follower, all", r.Sim)
	row("  submitted to the leader", r.SimLeader)
	row("  submitted to a follower", r.SimFollower)
	row("  submission to dispatch at agent", r.SimToDispatch)
	row("  dispatch at agent to answer", r.SimToAnswer)
	row("writ agent + sandbox, all", r.All)
	row("  submitted to the leader", r.Leader)
	row("  submitted to a follower", r.Follower)
	w("target: p50 <= 3ms + sandbox start = %s, p99 <= 15ms + sandbox start = %s",
		(3*time.Millisecond + r.SandboxStart).Round(time.Microsecond), (15*time.Millisecond + r.SandboxStart).Round(time.Microsecond))
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// echoCluster is what the end-to-end benches start in their process: 3
// servers on loopback in dir, and one real agent with the echo wasm tool.
type echoCluster struct {
	servers []*controlplane.Server
	creds   *controlplane.DevCredentials
	leader  *controlplane.Server
	node    string // the agent's node id
	caPEM   []byte
}

// startEchoCluster starts an echoCluster; stop stops the agent, then the
// servers.
func startEchoCluster(ctx context.Context, e *env, dir, echoWasm string) (*echoCluster, func(), error) {
	if err := copyFile(echoWasm, filepath.Join(dir, "tools", "echo.wasm")); err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelError}))
	base := controlplane.DefaultConfig()
	base.Logger = quiet
	base.AgentAddr = "on" // each server takes node sessions on its API port
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	lc, err := localcluster.Start(startCtx, dir, 3, base)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	servers, creds := lc.Servers, lc.Creds
	c := &echoCluster{servers: servers, creds: creds}
	var agentAddrs []string
	for _, s := range servers {
		if localcluster.IsLeader(s) {
			c.leader = s
		}
		agentAddrs = append(agentAddrs, s.AgentAddr())
	}
	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan error, 1)
	stop := func() {
		stopAgent()
		<-agentDone
		for _, s := range servers {
			s.Close(context.Background())
		}
	}
	if c.node, err = startBenchAgent(agentCtx, c.leader, dir, agentAddrs, quiet, agentDone); err != nil {
		stopAgent()
		for _, s := range servers {
			s.Close(context.Background())
		}
		return nil, nil, err
	}
	if c.caPEM, err = os.ReadFile(filepath.Join(dir, "pki", "ca.pem")); err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}
