package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/simagent"
	"github.com/writhq/writ/protocol"
)

// fleetOptions are the flags of `writ bench fleet`.
type fleetOptions struct {
	agents, dispatches, transports, conc int
	settle, rewarm                       time.Duration
	cpuProfile, heapProfile              string
}

func newBenchFleet(e *env) *cobra.Command {
	var o fleetOptions
	cmd := &cobra.Command{
		Use:   "fleet [--agents N] [--dispatches M]",
		Short: "Server memory per idle node session and dispatch latency with N simulated agents on one server",
		Long: `Start one server (writ dev's, on loopback) in a child process, then in this
process enroll N simulated agents with real join tokens and connect each over
QUIC with mutual TLS and its own CA-issued certificate, sharing a few UDP
sockets. The agents verify every dispatch and answer with signed results; they
run no tool. Measured, each beside its baseline from the same run:
  memory   the server's live heap (after GC), stacks, RSS and goroutines with
           no agent, then with N idle agents: the difference per agent
  dispatch submit-to-recorded-result latency (p50, p99) of M intents targeted
           at one node: first with one agent connected (the baseline), then
           at a random one of the N, then M untargeted intents`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.agents < 1 || o.agents > 100_000 || o.dispatches < 1 || o.transports < 1 || o.conc < 1 {
				return errors.New("--agents must be 1-100000; --dispatches, --transports and --concurrency positive")
			}
			r, err := benchFleet(e, o)
			if err != nil {
				return err
			}
			if e.output == "json" {
				return e.printJSON(r)
			}
			printFleet(e, r)
			return nil
		},
	}
	cmd.Flags().IntVar(&o.agents, "agents", 1000, "simulated agents")
	cmd.Flags().IntVar(&o.dispatches, "dispatches", 1000, "intents timed in each dispatch measurement")
	cmd.Flags().IntVar(&o.transports, "transports", 8, "UDP sockets the agents share")
	cmd.Flags().IntVar(&o.conc, "concurrency", 32, "enrollments and connections at once")
	cmd.Flags().DurationVar(&o.settle, "settle", 5*time.Second, "idle time before the memory is measured")
	cmd.Flags().DurationVar(&o.rewarm, "rewarm", 11*time.Second, "idle time after the memory is measured, before the dispatches to the fleet: at least the agents' heartbeat period (10 s)")
	cmd.Flags().StringVar(&o.cpuProfile, "cpuprofile", "", "write the server's CPU profile of the dispatches to the fleet to this file")
	cmd.Flags().StringVar(&o.heapProfile, "memprofile", "", "write the server's heap profile with the agents idle to this file, and one after the dispatches to FILE.end (compare their allocations with go tool pprof -sample_index alloc_space -base FILE FILE.end)")
	return cmd
}

// memReport is the fleet server's memory, after a GC.
type memReport struct {
	HeapAlloc  uint64 `json:"heap_alloc"`
	HeapInuse  uint64 `json:"heap_inuse"`
	StackInuse uint64 `json:"stack_inuse"`
	Sys        uint64 `json:"sys"`
	RSS        uint64 `json:"rss"`
	Goroutines int    `json:"goroutines"`
	Sessions   int    `json:"sessions"`
	// The server's garbage collections and their pauses before this
	// measurement forced its own, and after.
	NumGC         uint32 `json:"num_gc"`
	GCPause       uint64 `json:"gc_pause_total_ns"`
	NumGCForced   uint32 `json:"num_gc_with_forced"`
	GCPauseForced uint64 `json:"gc_pause_total_with_forced_ns"`
}

type latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

type fleetReport struct {
	Agents     int       `json:"agents"`
	Transports int       `json:"transports"`
	Procs      int       `json:"gomaxprocs"`
	Before     memReport `json:"server_before"`
	After      memReport `json:"server_after"`
	End        memReport `json:"server_end"` // after the dispatch measurements
	// Per idle agent: the differences divided by Agents.
	HeapPerAgent       float64       `json:"heap_per_agent"`
	StackPerAgent      float64       `json:"stack_per_agent"`
	RSSPerAgent        float64       `json:"rss_per_agent"`
	GoroutinesPerAgent float64       `json:"goroutines_per_agent"`
	Enroll             time.Duration `json:"enroll_ns"`
	Connect            time.Duration `json:"connect_ns"`
	// ConnectEach is one agent's dial, handshake, hello and welcome (the
	// hello committed through Raft), --concurrency at a time.
	ConnectEach latency `json:"connect_each"`
	// Dispatch latencies: one agent connected (the baseline), a random one of
	// the fleet, and untargeted intents over the fleet.
	One        latency `json:"dispatch_one_agent"`
	Random     latency `json:"dispatch_random_agent"`
	Untargeted latency `json:"dispatch_untargeted"`
	// AgentGCs are the garbage collections of this process, which runs the
	// simulated agents, during the dispatches to the fleet.
	AgentGCs uint32 `json:"sim_agent_gcs"`
}

func benchFleet(e *env, o fleetOptions) (*fleetReport, error) {
	dir, err := os.MkdirTemp("", "writ-bench-fleet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := startFleetServer(e, dir, o)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	creds, err := controlplane.LoadDevCredentials(filepath.Join(dir, "dev.json"))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	r := &fleetReport{Agents: o.agents, Transports: o.transports, Procs: runtime.GOMAXPROCS(0)}
	if r.Before, err = srv.mem(""); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: o.conc, MaxIdleConns: o.conc}}
	admin := client.New(srv.api, creds.AdminToken)
	tools, err := fleetTools(ctx, hc, srv.api)
	if err != nil {
		return nil, err
	}
	udp, err := net.ResolveUDPAddr("udp", srv.agentAddr)
	if err != nil {
		return nil, err
	}
	var trs []*quic.Transport
	for range o.transports {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, err
		}
		tr := &quic.Transport{Conn: pc}
		defer tr.Close()
		trs = append(trs, tr)
	}
	keys := &simagent.ServerKeys{}
	agents := make([]*simagent.Agent, o.agents)
	defer func() {
		for _, a := range agents {
			if a != nil {
				a.Close()
			}
		}
	}()
	start := time.Now()
	fmt.Fprintf(e.err, "writ bench fleet: enrolling %d agents\n", o.agents)
	if err := inParallel(o.agents, o.conc, func(i int) error {
		tok, err := admin.CreateJoinToken(ctx, map[string]string{"fleet": "bench"}, time.Hour)
		if err != nil {
			return err
		}
		agents[i], err = simagent.Enroll(ctx, hc, srv.api, tok.Token, "sim-"+strconv.Itoa(i))
		return err
	}); err != nil {
		return nil, fmt.Errorf("enrolling: %w", err)
	}
	r.Enroll = time.Since(start)
	hc.CloseIdleConnections() // the server's goroutines for them are not the agents'
	admin.CloseIdleConnections()

	connects := make([]time.Duration, o.agents)
	connect := func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		t := time.Now()
		err := agents[i].Connect(cctx, trs[i%len(trs)], udp, tools, keys)
		connects[i] = time.Since(t)
		return err
	}
	submitter := client.New(srv.api, "")
	submitter.NoProofWait = true
	secret, err := decodeSecret(creds.Orchestrator.Secret)
	if err != nil {
		return nil, err
	}
	sign := func(tag string, i int, target string) []byte {
		var t *protocol.Target
		if target != "" {
			t = &protocol.Target{Node: target}
		}
		return signBenchIntent(creds.Tenant, creds.Orchestrator.KeyID, secret, fmt.Sprintf("fleet-%s-%d", tag, i), `{"msg":"fleet"}`, t)
	}
	dispatch := func(tag string, target func() string) (latency, error) {
		lat := make([]time.Duration, o.dispatches)
		// The simulated agents share this process: collect its garbage now,
		// as the server's was, so that a cycle of the simulator's own is not
		// measured as the server's latency; count any that happen anyway.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		gcs := ms.NumGC
		defer func() {
			runtime.ReadMemStats(&ms)
			if tag != "one" {
				r.AgentGCs += ms.NumGC - gcs
			}
		}()
		for i := range lat {
			raw := sign(tag, i, target())
			t := time.Now()
			resp, err := submitter.Submit(ctx, raw, nil, 30*time.Second)
			lat[i] = time.Since(t)
			if err != nil {
				return latency{}, fmt.Errorf("%s intent %d: %w", tag, i, err)
			}
			if resp.State != "completed" {
				return latency{}, fmt.Errorf("%s intent %d ended %s: %+v", tag, i, resp.State, resp.Error)
			}
		}
		return percentiles(lat), nil
	}
	// The baseline: a fleet of one.
	if err := connect(0); err != nil {
		return nil, fmt.Errorf("connecting the first agent: %w", err)
	}
	fmt.Fprintf(e.err, "writ bench fleet: %d dispatches to the only agent\n", o.dispatches)
	if r.One, err = dispatch("one", func() string { return agents[0].ID }); err != nil {
		return nil, err
	}
	fmt.Fprintf(e.err, "writ bench fleet: connecting %d agents\n", o.agents)
	start = time.Now()
	if err := inParallel(o.agents-1, o.conc, func(i int) error { return connect(i + 1) }); err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	r.Connect = time.Since(start)
	r.ConnectEach = percentiles(connects[1:])
	time.Sleep(o.settle)
	if r.After, err = srv.mem(o.heapProfile); err != nil {
		return nil, err
	}
	for _, a := range agents {
		select {
		case <-a.Done():
			return nil, fmt.Errorf("agent %s lost its session while idle", a.ID)
		default:
		}
	}
	n := float64(o.agents)
	r.HeapPerAgent = (float64(r.After.HeapAlloc) - float64(r.Before.HeapAlloc)) / n
	r.StackPerAgent = (float64(r.After.StackInuse) - float64(r.Before.StackInuse)) / n
	r.RSSPerAgent = (float64(r.After.RSS) - float64(r.Before.RSS)) / n
	r.GoroutinesPerAgent = float64(r.After.Goroutines-r.Before.Goroutines) / n
	// Measuring memory forced collections that shrank every idle goroutine's
	// stack; a server's own GCs are minutes apart. Let each agent beat once,
	// which grows its session's stacks back, before timing dispatches.
	time.Sleep(o.rewarm)
	if o.cpuProfile != "" {
		if err := srv.command("cpu "+o.cpuProfile, nil); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(e.err, "writ bench fleet: %d dispatches to random agents\n", o.dispatches)
	if r.Random, err = dispatch("random", func() string { return agents[rand.IntN(len(agents))].ID }); err != nil {
		return nil, err
	}
	if r.Untargeted, err = dispatch("any", func() string { return "" }); err != nil {
		return nil, err
	}
	if o.cpuProfile != "" {
		if err := srv.command("cpustop", nil); err != nil {
			return nil, err
		}
	}
	end := ""
	if o.heapProfile != "" {
		end = o.heapProfile + ".end"
	}
	if r.End, err = srv.mem(end); err != nil {
		return nil, err
	}
	return r, nil
}

func printFleet(e *env, r *fleetReport) {
	w := func(format string, a ...any) { fmt.Fprintf(e.out, format+"\n", a...) }
	w("writ bench fleet: one server (child process), %d simulated agents over %d UDP sockets, GOMAXPROCS %d", r.Agents, r.Transports, r.Procs)
	w("enrolled in %s, connected in %s (each: p50 %s, p99 %s, max %s)", r.Enroll.Round(time.Millisecond), r.Connect.Round(time.Millisecond),
		r.ConnectEach.P50.Round(time.Millisecond), r.ConnectEach.P99.Round(time.Millisecond), r.ConnectEach.Max.Round(time.Millisecond))
	w("")
	w("%-26s %14s %14s %14s", "server memory (after GC)", "no agent", "agents", "per agent")
	kib := func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	w("%-26s %14s %14s %10.1f KiB", "live heap", kib(r.Before.HeapAlloc), kib(r.After.HeapAlloc), r.HeapPerAgent/1024)
	w("%-26s %14s %14s %10.1f KiB", "goroutine stacks", kib(r.Before.StackInuse), kib(r.After.StackInuse), r.StackPerAgent/1024)
	w("%-26s %14s %14s %10.1f KiB", "heap + stacks", kib(r.Before.HeapAlloc+r.Before.StackInuse), kib(r.After.HeapAlloc+r.After.StackInuse), (r.HeapPerAgent+r.StackPerAgent)/1024)
	w("%-26s %14s %14s %10.1f KiB", "RSS", kib(r.Before.RSS), kib(r.After.RSS), r.RSSPerAgent/1024)
	w("%-26s %14d %14d %14.2f", "goroutines", r.Before.Goroutines, r.After.Goroutines, r.GoroutinesPerAgent)
	w("%-26s %14d %14d", "node sessions", r.Before.Sessions, r.After.Sessions)
	w("")
	w("%-26s %10s %10s %10s", "dispatch, submit to result", "p50", "p99", "max")
	row := func(name string, l latency) {
		w("%-26s %10s %10s %10s", name, l.P50.Round(10*time.Microsecond), l.P99.Round(10*time.Microsecond), l.Max.Round(10*time.Microsecond))
	}
	row("one agent (baseline)", r.One)
	row(fmt.Sprintf("random of %d", r.Agents), r.Random)
	row(fmt.Sprintf("untargeted, %d", r.Agents), r.Untargeted)
	w("server GCs during the dispatches to the fleet: %d, %s of pauses; the simulated agents' process: %d", r.End.NumGC-r.After.NumGCForced,
		time.Duration(r.End.GCPause-r.After.GCPauseForced).Round(time.Microsecond), r.AgentGCs)
}

func percentiles(d []time.Duration) latency {
	if len(d) == 0 {
		return latency{}
	}
	s := append([]time.Duration(nil), d...)
	sortDurations(s)
	return latency{N: len(s), P50: s[len(s)/2], P99: s[(len(s)*99)/100], Max: s[len(s)-1]}
}

// inParallel runs f(0..n-1) over conc goroutines and returns the first error.
func inParallel(n, conc int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range min(conc, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = fmt.Errorf("%d: %w", i, err) })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func fleetTools(ctx context.Context, hc *http.Client, api string) ([]protocol.ToolRef, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/v1/tools", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Tools []struct {
			Name string `json:"name"`
			Hash string `json:"manifest_hash"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	var refs []protocol.ToolRef
	for _, t := range out.Tools {
		refs = append(refs, protocol.ToolRef{Name: t.Name, Hash: t.Hash})
	}
	return refs, nil
}

// fleetServer is the child process holding the server.
type fleetServer struct {
	cmd       *exec.Cmd
	in        io.WriteCloser
	out       *bufio.Scanner
	api       string
	agentAddr string
}

func startFleetServer(e *env, dir string, o fleetOptions) (*fleetServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"bench", "fleet-server", "--data-dir", dir, "--addr", addr}
	if o.heapProfile != "" {
		args = append(args, "--memprofilerate", "4096")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = e.err
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &fleetServer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	var hello struct {
		API       string `json:"api"`
		AgentAddr string `json:"agent_addr"`
	}
	if err := s.line(&hello); err != nil {
		s.stop()
		return nil, fmt.Errorf("the fleet server did not start: %w", err)
	}
	s.api, s.agentAddr = hello.API, hello.AgentAddr
	return s, nil
}

func (s *fleetServer) line(v any) error {
	if !s.out.Scan() {
		if err := s.out.Err(); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(s.out.Bytes(), v)
}

// mem asks the server for its memory after a GC, and a heap profile in file
// when set.
func (s *fleetServer) mem(file string) (memReport, error) {
	var m memReport
	return m, s.command(strings.TrimSpace("mem "+file), &m)
}

// command sends one line to the server and reads its answer into v.
func (s *fleetServer) command(line string, v any) error {
	if _, err := fmt.Fprintln(s.in, line); err != nil {
		return err
	}
	if v == nil {
		v = &struct{}{}
	}
	return s.line(v)
}

func (s *fleetServer) stop() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// newBenchFleetServer is the child of `writ bench fleet`: a dev server on
// loopback that reports its address on stdout, then answers "mem [FILE]" on
// stdin with its memory after a GC, until stdin closes.
func newBenchFleetServer(e *env) *cobra.Command {
	var dir, addr string
	var memRate int
	cmd := &cobra.Command{
		Use:    "fleet-server --data-dir DIR --addr ADDR",
		Short:  "The server process of writ bench fleet",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if memRate > 0 {
				runtime.MemProfileRate = memRate
			}
			base := controlplane.DefaultConfig()
			base.Logger = slog.New(slog.NewTextHandler(e.err, &slog.HandlerOptions{Level: slog.LevelError}))
			base.MaxInFlight = 4096
			base.MaxInFlightBytes, base.MaxQueued = 1<<30, 0
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			s, _, err := controlplane.StartDev(ctx, controlplane.DevConfig{DataDir: dir, HTTPAddr: addr,
				RaftAddr: "127.0.0.1:0", ToolsDir: filepath.Join(dir, "tools"), Base: base})
			cancel()
			if err != nil {
				return err
			}
			defer s.Close(context.Background())
			if err := e.printJSON(map[string]string{"api": "http://" + s.Addr().String(), "agent_addr": s.AgentAddr()}); err != nil {
				return err
			}
			sc := bufio.NewScanner(e.in)
			var cpu *os.File
			defer func() {
				if cpu != nil {
					pprof.StopCPUProfile()
					cpu.Close()
				}
			}()
			for sc.Scan() {
				cmd, file, _ := strings.Cut(sc.Text(), " ")
				var reply any = struct{}{}
				switch {
				case cmd == "mem":
					m := serverMem()
					m.Sessions = s.NodeSessions()
					if file != "" {
						if err := writeHeapProfile(file); err != nil {
							return err
						}
					}
					reply = m
				case cmd == "cpu" && cpu == nil:
					f, err := os.Create(file)
					if err != nil {
						return err
					}
					if err := pprof.StartCPUProfile(f); err != nil {
						f.Close()
						return err
					}
					cpu = f
				case cmd == "cpustop" && cpu != nil:
					pprof.StopCPUProfile()
					if err := cpu.Close(); err != nil {
						return err
					}
					cpu = nil
				default:
					return fmt.Errorf("fleet-server: unexpected command %q", sc.Text())
				}
				if err := e.printJSON(reply); err != nil {
					return err
				}
			}
			return sc.Err()
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "", "data directory")
	cmd.Flags().StringVar(&addr, "addr", "", "API address (TCP) and node sessions (UDP)")
	cmd.Flags().IntVar(&memRate, "memprofilerate", 0, "runtime.MemProfileRate (0: the default)")
	return cmd
}

// serverMem collects garbage until goroutine stacks stop shrinking (each GC
// halves an idle goroutine's oversized stack; a long-running server gets
// there by its periodic GCs), returns freed memory to the OS, and reports.
func serverMem() memReport {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs, pauses := ms.NumGC, ms.PauseTotalNs // the server's own, before those forced here
	runtime.GC()
	runtime.ReadMemStats(&ms)
	for range 10 {
		before := ms.StackInuse
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.StackInuse >= before {
			break
		}
	}
	debug.FreeOSMemory()
	runtime.ReadMemStats(&ms)
	return memReport{HeapAlloc: ms.HeapAlloc, HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, Sys: ms.Sys,
		RSS: selfRSS(), Goroutines: runtime.NumGoroutine(), NumGC: gcs, GCPause: pauses,
		NumGCForced: ms.NumGC, GCPauseForced: ms.PauseTotalNs}
}

func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Beside it, the goroutines, counted by stack.
	g, err := os.Create(file + ".goroutines")
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
		g.Close()
		return err
	}
	return g.Close()
}

// selfRSS is this process's resident set from /proc (0 where there is none).
func selfRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// freeLoopbackAddr is a loopback port free for both TCP and UDP: the API and
// node sessions share its number.
func freeLoopbackAddr() (string, error) {
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		pc, uerr := net.ListenPacket("udp", addr)
		ln.Close()
		if uerr == nil {
			pc.Close()
			return addr, nil
		}
	}
	return "", errors.New("no loopback port free for both TCP and UDP")
}
