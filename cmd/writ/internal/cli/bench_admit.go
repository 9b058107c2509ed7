package cli

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

func newBenchAdmit(e *env) *cobra.Command {
	var n, paramBytes int
	var prof benchProfiles
	var concs []int
	var modes, stores []string
	admit := &cobra.Command{
		Use:   "admit [--n N] [--concurrency 64,256] [--params-bytes 512] [--modes raft-apply,raft-grouped,admit-leader,admit-spread] [--log-stores bolt,raft-wal]",
		Short: "Admissions per second of a 3-server loopback cluster, beside raw Raft applies of entries of the same size",
		Long: `Start a 3-server cluster in this process on loopback (Raft over mutual TLS, the
API over TLS, memberlist discovery: the servers of writ server), record a ready
node that may run every tool (it never connects, so intents are admitted and
dispatched, and nothing runs), then at each concurrency measure, with N
operations each:
  raft-apply   raw Raft applies on the leader of no-op entries the size of an
               admission's command, each an entry of its own
  raft-grouped the same no-ops proposed as admissions are, with group commit:
               those proposed together share one entry
  admit-leader signed intents with params of --params-bytes, submitted to the
               leader's API with the Go client (client/, keep-alive over TLS)
  admit-spread the same, spread over the three servers (followers forward to
               the leader; a follower sends the submissions that arrive
               together in one request)
  https-post   the floor under any admission: the same bodies posted with the
               same client to a bare HTTPS server in this process (the
               servers' certificate and TLS settings) that reads each and
               answers a fixed intent response, and does nothing else
and print operations per second, p50 and p99 latency, the ratios to raft-apply
and raft-grouped, the commands per Raft entry the leader proposed, and the CPU
time of this whole process (servers and clients) per operation.

With --log-stores, one cluster per Raft log store runs (all started first),
each concurrency measures every store in turn, and a summary gives each
store's throughput as a ratio to the first's: bolt is the store servers run
on; raft-wal (hashicorp/raft-wal v0.4.0, the store servers migrate from) and
raft-boltdb (hashicorp/raft-boltdb/v2) are there only to compare.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, m := range modes {
				if !slices.Contains(benchModes, m) {
					return fmt.Errorf("--modes: unknown mode %q", m)
				}
			}
			stop, err := prof.start()
			if err != nil {
				return err
			}
			defer stop()
			if len(stores) == 0 {
				return fmt.Errorf("--log-stores: at least one")
			}
			return benchAdmit(e, n, paramBytes, concs, modes, stores)
		},
	}
	admit.Flags().IntVar(&n, "n", 20000, "operations per measurement")
	admit.Flags().IntSliceVar(&concs, "concurrency", []int{64, 256}, "concurrent clients")
	admit.Flags().IntVar(&paramBytes, "params-bytes", 512, "size of each intent's params")
	admit.Flags().StringSliceVar(&modes, "modes", benchModes, "what to measure")
	admit.Flags().StringSliceVar(&stores, "log-stores", []string{"bolt"}, "Raft log stores to measure, a cluster each, in the same run: bolt (Writ's), raft-wal, raft-boltdb; the first is the baseline of the summary")
	admit.Flags().StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the run to this file")
	admit.Flags().StringVar(&prof.block, "blockprofile", "", "write a profile of where goroutines blocked to this file")
	admit.Flags().StringVar(&prof.mutex, "mutexprofile", "", "write a profile of mutex contention to this file")
	admit.Flags().StringVar(&prof.allocs, "memprofile", "", "write a profile of allocations to this file")
	return admit
}

// benchProfiles are the pprof profiles a benchmark run writes.
type benchProfiles struct{ cpu, block, mutex, allocs string }

// start begins the profiles asked for; stop writes them.
func (p benchProfiles) start() (stop func(), err error) {
	var done []func()
	stop = func() {
		for _, f := range done {
			f()
		}
	}
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		done = append(done, func() { pprof.StopCPUProfile(); f.Close() })
	}
	for _, q := range []struct{ name, path string }{{"block", p.block}, {"mutex", p.mutex}, {"allocs", p.allocs}} {
		if q.path == "" {
			continue
		}
		switch q.name {
		case "block":
			runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		case "mutex":
			runtime.SetMutexProfileFraction(10)
		}
		done = append(done, func() {
			if f, err := os.Create(q.path); err == nil {
				pprof.Lookup(q.name).WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return stop, nil
}

var benchModes = []string{"raft-apply", "raft-grouped", "admit-leader", "admit-spread", "https-post"}

type benchResult struct {
	perSec   float64
	cpuPerOp time.Duration // CPU time of this whole process (servers and clients) per operation
	perEntry float64       // commands per Raft entry the leader proposed with group commit
	p50, p99 time.Duration
	errors   int64
	firstErr string
}

// benchCluster is one 3-server cluster of the run, on one log store.
type benchCluster struct {
	store     string
	dir       string
	servers   []*controlplane.Server
	leader    *controlplane.Server
	leaderURL string
	urls      []string
	clients   map[string]*client.Client
	sign      func(i int, tag string) []byte
}

// startBenchCluster starts a cluster whose Raft runs on the log store named
// store, in a directory under dir, and records the bench node.
func startBenchCluster(dir, store string, paramBytes int) (*benchCluster, error) {
	c := &benchCluster{store: store, dir: filepath.Join(dir, store), clients: map[string]*client.Client{}}
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	base.MaxInFlight = 8192
	base.MaxInFlightBytes = 1 << 30
	base.RaftLogStore = store
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	lc, err := localcluster.Start(ctx, c.dir, 3, base)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("log store %s: %w", store, err)
	}
	servers, creds := lc.Servers, lc.Creds
	c.servers = servers
	for _, s := range servers {
		c.urls = append(c.urls, "https://"+s.Addr().String())
	}
	if err := c.findLeader(); err != nil {
		c.close()
		return nil, err
	}
	if err := localcluster.AddBenchNode(context.Background(), c.leader); err != nil {
		c.close()
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(c.dir, "pki", "ca.pem"))
	if err != nil {
		c.close()
		return nil, err
	}
	for _, u := range append([]string{c.leaderURL}, c.urls...) {
		cl := client.New(u, "")
		if err := cl.TrustCA(caPEM); err != nil {
			c.close()
			return nil, err
		}
		c.clients[u] = cl
	}
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	params := `{"msg":"` + strings.Repeat("x", max(paramBytes-10, 0)) + `"}`
	c.sign = func(i int, tag string) []byte {
		now := time.Now().UTC()
		in := &protocol.Intent{
			Type: "writ.intent/v1", ID: fmt.Sprintf("bench-%s-%d", tag, i), Tenant: creds.Tenant, Principal: "bench", RunID: "bench",
			Tool: "echo", Params: jsontext.Value(params), IdempotencyKey: fmt.Sprintf("bench-%s-%d", tag, i),
			IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)), KeyID: creds.Orchestrator.KeyID,
		}
		in.SetPayloadHash()
		in.Sign(secret)
		// As writ intent sign writes it: canonical JSON.
		raw, _ := jsonx.Marshal(in)
		c, err := protocol.Canonicalize(raw)
		if err != nil {
			panic(err)
		}
		return c
	}
	return c, nil
}

func (c *benchCluster) close() {
	for _, s := range c.servers {
		s.Close(context.Background())
	}
}

func benchAdmit(e *env, n, paramBytes int, concs []int, modes, stores []string) error {
	dir, err := os.MkdirTemp("", "writ-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// One cluster per log store, all started first, so that each
	// concurrency measures every store at nearly the same time.
	var clusters []*benchCluster
	defer func() {
		for _, c := range clusters {
			c.close()
		}
	}()
	for _, store := range stores {
		c, err := startBenchCluster(dir, store, paramBytes)
		if err != nil {
			return err
		}
		clusters = append(clusters, c)
	}
	first := clusters[0]
	size, err := localcluster.AdmitEntrySize(first.sign(0, "size"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "writ bench admit: 3 servers on loopback, %d-byte params, entries of %d bytes, %d operations each, GOMAXPROCS %d, log stores %s\n",
		paramBytes, size, n, runtimeProcs(), strings.Join(stores, ", "))
	fmt.Fprintf(e.out, "%-6s %-11s %-13s %10s %10s %10s %8s %9s %9s %8s\n", "conc", "log store", "what", "ops/s", "p50", "p99", "x raft", "x grouped", "cmds/entry", "cpu/op")
	var bare *client.Client
	if slices.Contains(modes, "https-post") {
		url, stop, err := bareHTTPS(first.dir)
		if err != nil {
			return err
		}
		defer stop()
		caPEM, err := os.ReadFile(filepath.Join(first.dir, "pki", "ca.pem"))
		if err != nil {
			return err
		}
		if bare = client.New(url, ""); bare.TrustCA(caPEM) != nil {
			return fmt.Errorf("https-post: the cluster CA does not load")
		}
	}
	// results[conc][what] holds each store's measurement, for the summary.
	results := map[int]map[string][]benchResult{}
	for _, conc := range concs {
		results[conc] = map[string][]benchResult{}
		for _, c := range clusters {
			if err := benchCluster1(e, c, n, conc, size, modes, results[conc]); err != nil {
				return err
			}
		}
		if bare != nil {
			body := first.sign(0, "bare")
			post := func(int) error {
				_, err := bare.Submit(context.Background(), body, nil, 0)
				return err
			}
			if w := measure(2*conc, conc, post); w.errors > 0 {
				return fmt.Errorf("https-post warming up: %d errors; first: %s", w.errors, w.firstErr)
			}
			if err := settle(first.servers, first.leader); err != nil {
				return err
			}
			row(e, conc, "-", "https-post", measure(n, conc, post), benchResult{}, benchResult{})
		}
	}
	if len(clusters) > 1 {
		storeSummary(e, concs, modes, stores, results)
	}
	return nil
}

// benchCluster1 measures the modes on one cluster at one concurrency, and
// adds each measurement to results.
func benchCluster1(e *env, c *benchCluster, n, conc, size int, modes []string, results map[string][]benchResult) error {
	if err := c.findLeader(); err != nil {
		return err
	}
	var raw, grouped benchResult
	for _, m := range []struct {
		name    string
		grouped bool
		out     *benchResult
	}{{"raft-apply", false, &raw}, {"raft-grouped", true, &grouped}} {
		if !slices.Contains(modes, m.name) {
			continue
		}
		if err := settle(c.servers, c.leader); err != nil {
			return err
		}
		e0, c0 := localcluster.GroupStats(c.leader)
		*m.out = measure(n, conc, func(int) error { return localcluster.ApplyNoop(context.Background(), c.leader, size, m.grouped) })
		e1, c1 := localcluster.GroupStats(c.leader)
		if m.grouped {
			m.out.perEntry = float64(c1-c0) / float64(max(e1-e0, 1))
		}
		row(e, conc, c.store, m.name, *m.out, raw, grouped)
		results[m.name] = append(results[m.name], *m.out)
	}
	for _, mode := range []string{"leader", "spread"} {
		if !slices.Contains(modes, "admit-"+mode) {
			continue
		}
		// The first 2×conc submissions warm up: they open the clients'
		// (and forwarding followers') TLS connections, which an
		// orchestrator keeps open, so that handshakes are not counted
		// as the cost of admissions.
		warm := 2 * conc
		bodies := make([][]byte, warm+n)
		for i := range bodies {
			bodies[i] = c.sign(i, fmt.Sprintf("%s%d", mode, conc))
		}
		submit := func(i int) error {
			u := c.leaderURL
			if mode == "spread" {
				u = c.urls[i%len(c.urls)]
			}
			resp, err := c.clients[u].Submit(context.Background(), bodies[i], nil, 0)
			if err != nil {
				return err
			}
			if resp.State != "dispatched" {
				return fmt.Errorf("intent %s is %s, not dispatched", resp.IntentID, resp.State)
			}
			return nil
		}
		if w := measure(warm, conc, submit); w.errors > 0 {
			return fmt.Errorf("warming up: %d errors; first: %s", w.errors, w.firstErr)
		}
		if err := settle(c.servers, c.leader); err != nil {
			return err
		}
		e0, c0 := localcluster.GroupStats(c.leader)
		r := measure(n, conc, func(i int) error { return submit(warm + i) })
		e1, c1 := localcluster.GroupStats(c.leader)
		r.perEntry = float64(c1-c0) / float64(max(e1-e0, 1))
		row(e, conc, c.store, "admit-"+mode, r, raw, grouped)
		results["admit-"+mode] = append(results["admit-"+mode], r)
	}
	return nil
}

// storeSummary prints, for each concurrency and mode, every log store's
// throughput as a ratio to the first store's, measured in the same run.
func storeSummary(e *env, concs []int, modes, stores []string, results map[int]map[string][]benchResult) {
	fmt.Fprintf(e.out, "\nlog stores against %s (ops/s, p50, p99; ratio of ops/s):\n", stores[0])
	for _, conc := range concs {
		for _, m := range modes {
			rs := results[conc][m]
			if len(rs) != len(stores) {
				continue
			}
			line := fmt.Sprintf("%-6d %-13s", conc, m)
			for i, r := range rs {
				line += fmt.Sprintf("  %s %.0f/s %v %v %.0f%%", stores[i], r.perSec, r.p50.Round(10*time.Microsecond),
					r.p99.Round(10*time.Microsecond), 100*r.perSec/rs[0].perSec)
				if r.errors > 0 {
					line += fmt.Sprintf(" (%d errors)", r.errors)
				}
			}
			fmt.Fprintln(e.out, line)
		}
	}
}

// settle waits until every server has applied the leader's whole log, so
// that a measurement does not pay for the end of the one before: a follower
// left behind, catching up, takes the CPU the next one would have.
// findLeader points c at the cluster's leader, waiting a minute at most
// for one: on a loaded machine leadership may move between measurements,
// and the raw modes propose on the leader only.
func (c *benchCluster) findLeader() error {
	deadline := time.Now().Add(time.Minute)
	for {
		for _, s := range c.servers {
			if localcluster.IsLeader(s) {
				c.leader, c.leaderURL = s, "https://"+s.Addr().String()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no leader in the cluster for a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func settle(servers []*controlplane.Server, leader *controlplane.Server) error {
	last := localcluster.AppliedIndex(leader)
	deadline := time.Now().Add(time.Minute)
	for _, s := range servers {
		for localcluster.AppliedIndex(s) < last {
			if time.Now().After(deadline) {
				return fmt.Errorf("server %s did not apply the log up to %d within a minute", localcluster.ID(s), last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// bareHTTPS serves, over TLS with the first server's certificate and the
// API's TLS settings, an endpoint that reads a submission and answers a fixed
// intent response: what an admission costs in HTTPS alone.
func bareHTTPS(dir string) (url string, stop func(), err error) {
	pki := filepath.Join(dir, "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "s1.pem"), filepath.Join(pki, "s1.key"))
	if err != nil {
		return "", nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", nil, err
	}
	srv := serveBare(ln, protocol.IntentResponse{IntentID: "bench-bare", State: "dispatched"})
	return "https://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// serveBare serves on ln an endpoint that reads a request's body (up to
// 1 MiB) and answers answer, and does nothing else: the HTTP floor of the
// benches.
func serveBare(ln net.Listener, answer protocol.IntentResponse) *http.Server {
	body, _ := jsonx.Marshal(answer)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<20)); err != nil {
			http.Error(w, "unreadable", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	return srv
}

// row prints one measurement with its ratios to the raw baselines of the
// same concurrency.
func row(e *env, conc int, store, what string, r, raw, grouped benchResult) {
	ratio := func(base benchResult) string {
		if base.perSec == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*r.perSec/base.perSec)
	}
	per := "-"
	if r.perEntry > 0 {
		per = fmt.Sprintf("%.1f", r.perEntry)
	}
	fmt.Fprintf(e.out, "%-6d %-11s %-13s %10.0f %10s %10s %8s %9s %9s %8s\n", conc, store, what, r.perSec, r.p50.Round(10*time.Microsecond),
		r.p99.Round(10*time.Microsecond), ratio(raw), ratio(grouped), per, r.cpuPerOp.Round(time.Microsecond))
	if r.errors > 0 {
		fmt.Fprintf(e.out, "       %d errors; first: %s\n", r.errors, r.firstErr)
	}
}

// measure runs n calls of f over conc goroutines.
func measure(n, conc int, f func(i int) error) benchResult {
	var next, errs atomic.Int64
	var first atomic.Value
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	cpu0 := processCPU()
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if err := f(i); err != nil {
					if errs.Add(1) == 1 {
						first.Store(err.Error())
					}
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	cpu := processCPU() - cpu0
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	r := benchResult{perSec: float64(n) / el.Seconds(), p50: lat[n/2], p99: lat[n*99/100], errors: errs.Load(), cpuPerOp: cpu / time.Duration(n)}
	if s, ok := first.Load().(string); ok {
		r.firstErr = s
	}
	return r
}

// processCPU is the user and system CPU time this process has used: on a
// shared machine, where throughput depends on what else runs, the cost of an
// operation is still measured.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
