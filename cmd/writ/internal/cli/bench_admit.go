package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/protocol"
)

func newBenchAdmit(e *env) *cobra.Command {
	var n, paramBytes int
	var prof benchProfiles
	var concs []int
	var modes []string
	admit := &cobra.Command{
		Use:   "admit [--n N] [--concurrency 64,256] [--params-bytes 512] [--modes raft-apply,admit-leader,admit-spread]",
		Short: "Admissions per second of a 3-server loopback cluster, beside raw Raft applies of entries of the same size",
		Long: `Start a 3-server cluster in this process on loopback (Raft over mutual TLS, the
API over TLS, memberlist discovery: the servers of writ server), record a ready
node that may run every tool (it never connects, so intents are admitted and
dispatched, and nothing runs), then at each concurrency measure, with N
operations each:
  raft-apply   raw Raft applies on the leader of no-op entries the size of an admission's entry
  admit-leader signed intents with params of --params-bytes, POSTed to the leader's API
  admit-spread the same, spread over the three servers (followers forward to the leader)
and print operations per second, p50 and p99 latency, and the ratio to raft-apply.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, m := range modes {
				if m != "raft-apply" && m != "admit-leader" && m != "admit-spread" {
					return fmt.Errorf("--modes: unknown mode %q", m)
				}
			}
			stop, err := prof.start()
			if err != nil {
				return err
			}
			defer stop()
			return benchAdmit(e, n, paramBytes, concs, modes)
		},
	}
	admit.Flags().IntVar(&n, "n", 20000, "operations per measurement")
	admit.Flags().IntSliceVar(&concs, "concurrency", []int{64, 256}, "concurrent clients")
	admit.Flags().IntVar(&paramBytes, "params-bytes", 512, "size of each intent's params")
	admit.Flags().StringSliceVar(&modes, "modes", []string{"raft-apply", "admit-leader", "admit-spread"}, "what to measure")
	admit.Flags().StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the run to this file")
	admit.Flags().StringVar(&prof.block, "blockprofile", "", "write a profile of where goroutines blocked to this file")
	admit.Flags().StringVar(&prof.mutex, "mutexprofile", "", "write a profile of mutex contention to this file")
	return admit
}

// benchProfiles are the pprof profiles a benchmark run writes.
type benchProfiles struct{ cpu, block, mutex string }

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
	for _, q := range []struct{ name, path string }{{"block", p.block}, {"mutex", p.mutex}} {
		if q.path == "" {
			continue
		}
		if q.name == "block" {
			runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		} else {
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

type benchResult struct {
	perSec   float64
	cpuPerOp time.Duration // CPU time of this whole process (servers and clients) per operation
	p50, p99 time.Duration
	errors   int64
	firstErr string
}

func benchAdmit(e *env, n, paramBytes int, concs []int, modes []string) error {
	dir, err := os.MkdirTemp("", "writ-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	base.MaxInFlight = 8192
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	servers, creds, err := controlplane.StartLocalCluster(ctx, dir, 3, base)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range servers {
			s.Close(context.Background())
		}
	}()
	var leader *controlplane.Server
	var urls []string
	for _, s := range servers {
		if s.IsLeader() {
			leader = s
		}
		urls = append(urls, "https://"+s.Addr().String()+"/v1/intents")
	}
	leaderURL := "https://" + leader.Addr().String() + "/v1/intents"
	if err := leader.AddBenchNode(context.Background()); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.pem"))
	if err != nil {
		return err
	}
	secret, _ := base64.StdEncoding.DecodeString(creds.Orchestrator.Secret)
	params := `{"msg":"` + strings.Repeat("x", max(paramBytes-10, 0)) + `"}`
	sign := func(i int, tag string) []byte {
		now := time.Now().UTC()
		in := &protocol.Intent{
			Type: "writ.intent/v1", ID: fmt.Sprintf("bench-%s-%d", tag, i), Tenant: creds.Tenant, Principal: "bench", RunID: "bench",
			Tool: "echo", Params: jsontext.Value(params), IdempotencyKey: fmt.Sprintf("bench-%s-%d", tag, i),
			IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(10 * time.Minute)), KeyID: creds.Orchestrator.KeyID,
		}
		in.SetPayloadHash()
		in.Sign(secret)
		raw, _ := json.Marshal(in)
		return raw
	}
	size, err := controlplane.AdmitEntrySize(sign(0, "size"))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "writ bench admit: 3 servers on loopback, %d-byte params, entries of %d bytes, %d operations each, GOMAXPROCS %d\n",
		paramBytes, size, n, runtimeProcs())
	fmt.Fprintf(e.out, "%-6s %-13s %12s %10s %10s %8s %10s\n", "conc", "what", "ops/s", "p50", "p99", "x raft", "cpu/op")
	for _, conc := range concs {
		raw := benchResult{}
		if slices.Contains(modes, "raft-apply") {
			raw = measure(n, conc, func(int) error { return leader.ApplyNoop(context.Background(), size) })
			row(e, conc, "raft-apply", raw, raw.perSec)
		}
		for _, mode := range []string{"leader", "spread"} {
			if !slices.Contains(modes, "admit-"+mode) {
				continue
			}
			bodies := make([][]byte, n)
			for i := range bodies {
				bodies[i] = []byte(`{"intent":` + string(sign(i, fmt.Sprintf("%s%d", mode, conc))) + `}`)
			}
			hc := benchHTTP(caPEM, conc)
			r := measure(n, conc, func(i int) error {
				u := leaderURL
				if mode == "spread" {
					u = urls[i%len(urls)]
				}
				resp, err := hc.Post(u, "application/json", bytes.NewReader(bodies[i]))
				if err != nil {
					return err
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d: %s", resp.StatusCode, b)
				}
				if !bytes.Contains(b, []byte(`"state":"dispatched"`)) {
					return fmt.Errorf("not dispatched: %s", b)
				}
				return nil
			})
			hc.CloseIdleConnections()
			row(e, conc, "admit-"+mode, r, raw.perSec)
		}
	}
	return nil
}

func row(e *env, conc int, what string, r benchResult, raw float64) {
	ratio := "-"
	if raw > 0 {
		ratio = fmt.Sprintf("%.0f%%", 100*r.perSec/raw)
	}
	fmt.Fprintf(e.out, "%-6d %-13s %12.0f %10s %10s %8s %10s\n", conc, what, r.perSec, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), ratio, r.cpuPerOp.Round(time.Microsecond))
	if r.errors > 0 {
		fmt.Fprintf(e.out, "       %d errors; first: %s\n", r.errors, r.firstErr)
	}
}

func benchHTTP(caPEM []byte, conc int) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: conc, MaxIdleConns: 4 * conc,
	}}
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
