package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/tiers"
)

// newBenchLoadEchoServer is the HTTP floor of writ bench load, in a process
// of its own as the servers are: it reads each POST's body and answers a
// fixed completed intent response, and does nothing else. With --cert and
// --key it serves TLS with the API's settings, as writ server does; without,
// plain HTTP on loopback, as writ dev does. It prints its URL on stdout and
// serves until its stdin closes.
func newBenchLoadEchoServer(e *env) *cobra.Command {
	var addr, cert, key string
	cmd := &cobra.Command{
		Use:    "load-echo-server --addr ADDR [--cert FILE --key FILE]",
		Short:  "The bare HTTP(S) floor of writ bench load",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			scheme := "http"
			if cert != "" {
				c, err := tls.LoadX509KeyPair(cert, key)
				if err != nil {
					ln.Close()
					return err
				}
				ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12})
				scheme = "https"
			}
			srv := serveBare(ln, protocol.IntentResponse{IntentID: "bench-floor", State: "completed"})
			defer srv.Close()
			if err := e.printJSON(map[string]string{"url": scheme + "://" + ln.Addr().String()}); err != nil {
				return err
			}
			io.Copy(io.Discard, e.in) // until the bench closes stdin
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to serve on")
	cmd.Flags().StringVar(&cert, "cert", "", "TLS certificate (PEM); plain HTTP without")
	cmd.Flags().StringVar(&key, "key", "", "TLS key (PEM)")
	return cmd
}

// sandboxLoadRun is the answer of writ bench load-sandbox to one "run".
type sandboxLoadRun struct {
	Runs       int64         `json:"runs"`
	Failed     int64         `json:"failed"`
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
}

// newBenchLoadSandbox is the sandbox floor of writ bench load: the echo
// tool in the wasm tier, as the agent runs it (the tier's driver, its
// module cache, a workspace per run slot), with nothing around it. It
// prints {"ready":true} once the module is compiled and warm, then answers
// each line "run CONCURRENCY DURATION" on stdin: that many goroutines
// running the tool one run after another for the duration.
func newBenchLoadSandbox(e *env) *cobra.Command {
	var echoWasm string
	var paramBytes int
	cmd := &cobra.Command{
		Use:    "load-sandbox --echo-wasm FILE [--params-bytes N]",
		Short:  "The sandbox floor of writ bench load",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			work, err := os.MkdirTemp("", "writ-bench-load-sandbox-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			cfg := tiers.DefaultConfig()
			cfg.Wasm.CacheDir = filepath.Join(work, "cache")
			d, err := tiers.New(sandbox.TierWasm, cfg)
			if err != nil {
				return err
			}
			if err := d.Available(); err != nil {
				return err
			}
			params := benchLoadParams(paramBytes)
			m := sandbox.Manifest{Name: "echo", Tier: sandbox.TierWasm, Module: echoWasm}
			ctx := context.Background()
			var slots sync.Map // workspace per goroutine
			runOne := func(slot int) error {
				ws, ok := slots.Load(slot)
				if !ok {
					dir := filepath.Join(work, "ws-"+strconv.Itoa(slot))
					if err := os.Mkdir(dir, 0o777); err != nil {
						return err
					}
					os.Chmod(dir, 0o777)
					ws, _ = slots.LoadOrStore(slot, dir)
				}
				o, err := d.Run(ctx, sandbox.Invocation{Manifest: m, Params: []byte(params), Workspace: ws.(string)})
				if err == nil && (o.Status != sandbox.StatusOK || string(o.Output) != params) {
					err = fmt.Errorf("echo: %s, %d bytes of output, stderr %q", o.Status, len(o.Output), o.Stderr)
				}
				return err
			}
			for range 5 { // compile, cache and warm
				if err := runOne(0); err != nil {
					return err
				}
			}
			if err := e.printJSON(map[string]bool{"ready": true}); err != nil {
				return err
			}
			sc := bufio.NewScanner(e.in)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[0] != "run" {
					return fmt.Errorf("load-sandbox: unexpected command %q", sc.Text())
				}
				conc, err1 := strconv.Atoi(f[1])
				dur, err2 := time.ParseDuration(f[2])
				if err := errors.Join(err1, err2); err != nil || conc < 1 || conc > 4096 || dur <= 0 {
					return fmt.Errorf("load-sandbox: bad command %q", sc.Text())
				}
				c := closedLoop(conc, dur, func(w, _ int) error { return runOne(w) })
				if err := e.printJSON(sandboxLoadRun{Runs: c.completed, Failed: c.failed, FirstError: c.firstErr,
					Elapsed: c.elapsed, P50: c.lat.P50, P99: c.lat.P99}); err != nil {
					return err
				}
			}
			return sc.Err()
		},
	}
	cmd.Flags().StringVar(&echoWasm, "echo-wasm", "", "the echo tool as a wasip1 module")
	cmd.Flags().IntVar(&paramBytes, "params-bytes", 512, "size of each run's params")
	cmd.MarkFlagRequired("echo-wasm")
	return cmd
}

// benchLoadParams is the echo tool's params of n bytes, as the intents of
// writ bench load carry them.
func benchLoadParams(n int) string {
	return `{"msg":"` + strings.Repeat("x", max(n-10, 0)) + `"}`
}

// loopResult is one closed-loop measurement.
type loopResult struct {
	submitted, completed, failed int64
	firstErr                     string
	elapsed                      time.Duration
	lat                          latency
}

// closedLoop runs conc workers, each calling f(worker, i) one call after
// another until dur has passed since the start, at least once each; every
// call started is waited for, and the elapsed time ends with the last.
func closedLoop(conc int, dur time.Duration, f func(w, i int) error) loopResult {
	var r loopResult
	var seq, submitted, completed, failed atomic.Int64
	var once sync.Once
	lats := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker makes at least one call, however late it starts
			// on a loaded machine.
			for first := true; first || time.Since(start) < dur; first = false {
				i := int(seq.Add(1))
				submitted.Add(1)
				t := time.Now()
				if err := f(w, i); err != nil {
					failed.Add(1)
					once.Do(func() { r.firstErr = err.Error() })
					continue
				}
				lats[w] = append(lats[w], time.Since(t))
				completed.Add(1)
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	r.submitted, r.completed, r.failed, r.lat = submitted.Load(), completed.Load(), failed.Load(), percentiles(all)
	return r
}
