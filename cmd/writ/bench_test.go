package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchRun runs the built binary's `writ bench …` with args and decodes its
// JSON line into v.
func benchRun(tb testing.TB, v any, args ...string) {
	tb.Helper()
	cmd := exec.Command(writBin, append([]string{"bench"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		tb.Fatalf("writ bench %v: %v\n%s", args, err, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		tb.Fatalf("writ bench %v: %v: %q", args, err, out.String())
	}
}

type benchLatency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
}

type e2eFigures struct {
	RTT          benchLatency  `json:"quic_rtt"`
	Fsync        benchLatency  `json:"fsync"`
	RaftApply    benchLatency  `json:"raft_apply"`
	SandboxStart time.Duration `json:"sandbox_start_p50_ns"`
	Sim          benchLatency  `json:"e2e_sim_agent"`
	All          benchLatency  `json:"e2e"`
	Leader       benchLatency  `json:"e2e_via_leader"`
	Follower     benchLatency  `json:"e2e_via_follower"`
}

type fleetFigures struct {
	Agents             int          `json:"agents"`
	HeapPerAgent       float64      `json:"heap_per_agent"`
	StackPerAgent      float64      `json:"stack_per_agent"`
	RSSPerAgent        float64      `json:"rss_per_agent"`
	GoroutinesPerAgent float64      `json:"goroutines_per_agent"`
	One                benchLatency `json:"dispatch_one_agent"`
	Random             benchLatency `json:"dispatch_random_agent"`
	Untargeted         benchLatency `json:"dispatch_untargeted"`
	After              struct {
		Sessions int `json:"sessions"`
	} `json:"server_after"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkE2E is `writ bench e2e`: submit-to-recorded-result latency of the
// echo tool through 3 servers and one writ agent (wasm tier), submitted to
// each server in turn, beside a raw QUIC round trip, an fsync, a Raft apply
// and the sandbox's start from the same run. b.N intents, at least 100:
// go test -run '^$' -bench E2E -benchtime 300x ./cmd/writ/
func BenchmarkE2E(b *testing.B) {
	var r e2eFigures
	benchRun(b, &r, "e2e", "--n", strconv.Itoa(max(b.N, 100)), "--echo-wasm", filepath.Join(toolsDir, "echo.wasm"))
	b.ReportMetric(us(r.All.P50), "e2e-p50-µs")
	b.ReportMetric(us(r.All.P99), "e2e-p99-µs")
	b.ReportMetric(us(r.Follower.P50), "follower-p50-µs")
	b.ReportMetric(us(r.Sim.P50), "sim-agent-p50-µs")
	b.ReportMetric(us(r.RTT.P50), "rtt-p50-µs")
	b.ReportMetric(us(r.RTT.P99), "rtt-p99-µs")
	b.ReportMetric(us(r.RaftApply.P50), "raft-p50-µs")
	b.ReportMetric(us(r.SandboxStart), "sandbox-p50-µs")
}

// BenchmarkFleet is `writ bench fleet`: simulated agents on one server in a
// child process, server memory per idle agent and dispatch latency to a
// random one beside the one-agent baseline. WRIT_BENCH_FLEET_AGENTS agents
// (default 200; `make bench` runs 10,000 through the CLI), b.N dispatches,
// at least 200.
func BenchmarkFleet(b *testing.B) {
	agents := 200
	if v, err := strconv.Atoi(os.Getenv("WRIT_BENCH_FLEET_AGENTS")); err == nil && v > 0 {
		agents = v
	}
	var r fleetFigures
	benchRun(b, &r, "fleet", "--agents", strconv.Itoa(agents), "--dispatches", strconv.Itoa(max(b.N, 200)), "--settle", "2s")
	b.ReportMetric(float64(agents), "agents")
	b.ReportMetric((r.HeapPerAgent+r.StackPerAgent)/1024, "heap+stack-KiB/agent")
	b.ReportMetric(r.RSSPerAgent/1024, "rss-KiB/agent")
	b.ReportMetric(us(r.Random.P50), "random-p50-µs")
	b.ReportMetric(us(r.Random.P99), "random-p99-µs")
	b.ReportMetric(us(r.One.P99), "one-agent-p99-µs")
}

// TestBenchFleet runs `writ bench fleet` small: every agent enrolls and
// holds its session, and every dispatch, targeted or not, completes (the
// command fails otherwise). Figures are not judged here.
func TestBenchFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	var r fleetFigures
	benchRun(t, &r, "fleet", "--agents", "20", "--dispatches", "20", "--settle", "1s", "--rewarm", "0s")
	if r.Agents != 20 || r.After.Sessions != 20 || r.Random.N != 20 || r.Untargeted.N != 20 || r.One.N != 20 {
		t.Fatalf("writ bench fleet: %+v", r)
	}
	if r.GoroutinesPerAgent > 3.5 {
		t.Errorf("%.2f server goroutines per idle node session; want 3 (quic-go's two and the reader)", r.GoroutinesPerAgent)
	}
}

// TestBenchE2E runs `writ bench e2e` small: 3 servers, the writ agent and a
// simulated one, every intent completed.
func TestBenchE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	var r e2eFigures
	benchRun(t, &r, "e2e", "--n", "6", "--sandbox-n", "3", "--echo-wasm", filepath.Join(toolsDir, "echo.wasm"))
	if r.All.N != 6 || r.Sim.N != 6 || r.Leader.N+r.Follower.N != 6 || r.Follower.N == 0 || r.SandboxStart <= 0 {
		t.Fatalf("writ bench e2e: %+v", r)
	}
}

// TestBenchAdmit runs `writ bench admit` small on two log stores: every row
// is printed for each, with operations per second, and the summary compares
// them; no operation failed (a failed submission or bare post prints an
// errors line).
func TestBenchAdmit(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	cmd := exec.Command(writBin, "bench", "admit", "--n", "300", "--concurrency", "8", "--log-stores", "bolt,raft-wal", "-o", "text")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("writ bench admit: %v\n%s", err, errb.String())
	}
	if bytes.Contains(out.Bytes(), []byte("errors; first")) {
		t.Fatalf("operations failed:\n%s", out.String())
	}
	for _, row := range []struct{ store, mode string }{
		{"bolt", "raft-apply"}, {"bolt", "raft-grouped"}, {"bolt", "admit-leader"}, {"bolt", "admit-spread"},
		{"raft-wal", "raft-apply"}, {"raft-wal", "raft-grouped"}, {"raft-wal", "admit-leader"}, {"raft-wal", "admit-spread"},
		{"-", "https-post"},
	} {
		mode := row.store + " " + row.mode
		found := false
		for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
			f := bytes.Fields(line)
			if len(f) >= 4 && string(f[0]) == "8" && string(f[1]) == row.store && string(f[2]) == row.mode {
				if v, err := strconv.ParseFloat(string(f[3]), 64); err != nil || v <= 0 {
					t.Fatalf("%s: %q is no rate", mode, f[3])
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("no %s row in:\n%s", mode, out.String())
		}
	}
	if !bytes.Contains(out.Bytes(), []byte("log stores against bolt")) || !regexp.MustCompile(`(?m)^8 +admit-leader +bolt [0-9]+/s .* raft-wal [0-9]+/s .*%$`).Match(out.Bytes()) {
		t.Fatalf("no summary of raft-wal against bolt in:\n%s", out.String())
	}
}

// TestBenchMCP runs `writ bench mcp` small: every call through writ mcp (over
// stdio and in process) and every direct submission completed with its
// output.
func TestBenchMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	var r struct {
		MCP          benchLatency `json:"mcp_tools_call"`
		InProcess    benchLatency `json:"mcp_in_process_tools_call"`
		DirectOutput benchLatency `json:"direct_submit_and_output"`
		MCPRate      float64      `json:"mcp_calls_per_second"`
		Floor        benchLatency `json:"floor_stdio_echo"`
	}
	benchRun(t, &r, "mcp", "--n", "5", "--echo-wasm", filepath.Join(toolsDir, "echo.wasm"))
	if r.MCP.N != 5 || r.InProcess.N != 5 || r.DirectOutput.N != 5 || r.MCP.P50 <= 0 || r.MCPRate <= 0 || r.Floor.N != 5 || r.Floor.P50 <= 0 {
		t.Fatalf("writ bench mcp: %+v", r)
	}
}

type loadCellFigures struct {
	Submitted    int64                    `json:"submitted"`
	Completed    int64                    `json:"completed"`
	Failed       int64                    `json:"failed"`
	PerSecond    float64                  `json:"per_second"`
	CPU          time.Duration            `json:"cpu_ns"`
	CPUPerOp     time.Duration            `json:"cpu_per_op_ns"`
	CPUByProcess map[string]time.Duration `json:"cpu_by_process_ns"`
	Latency      benchLatency             `json:"latency"`
}

type loadFigures struct {
	Counted string `json:"counted"`
	Idle    []struct {
		Setup        string                   `json:"setup"`
		CPUByProcess map[string]time.Duration `json:"cpu_by_process_ns"`
	} `json:"idle"`
	Rows []struct {
		Setup       string           `json:"setup"`
		Agent       string           `json:"agent"`
		Concurrency int              `json:"concurrency"`
		Writ        loadCellFigures  `json:"writ"`
		HTTPS       loadCellFigures  `json:"https_floor"`
		Sandbox     *loadCellFigures `json:"sandbox_floor"`
	} `json:"rows"`
}

// TestBenchLoad runs `writ bench load` small: writ dev, and three writ
// server processes with a writ agent, each with the real agent and the
// simulated one, at concurrencies 1 and 2. Every row is there with its
// floors, every submitted intent completed (the command also fails
// otherwise), and the CPU is counted for the Writ processes of the setup
// and no others. Figures are not judged here.
func TestBenchLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: a benchmark")
	}
	var r loadFigures
	benchRun(t, &r, "load", "--concurrency", "1,2", "--duration", "1s", "--echo-wasm", filepath.Join(toolsDir, "echo.wasm"))
	procs := map[string][]string{"dev": {"dev"}, "cluster": {"agent", "s1", "s2", "s3"}}
	roles := func(m map[string]time.Duration) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if len(r.Idle) != 2 || r.Counted == "" {
		t.Fatalf("idle %+v, counted %q", r.Idle, r.Counted)
	}
	for _, i := range r.Idle {
		if got := roles(i.CPUByProcess); !slices.Equal(got, procs[i.Setup]) {
			t.Errorf("%s idle: CPU of %v, want %v", i.Setup, got, procs[i.Setup])
		}
	}
	want := []string{"dev wasm 1", "dev sim 1", "dev wasm 2", "dev sim 2", "cluster wasm 1", "cluster sim 1", "cluster wasm 2", "cluster sim 2"}
	var got []string
	for _, row := range r.Rows {
		name := fmt.Sprintf("%s %s %d", row.Setup, row.Agent, row.Concurrency)
		got = append(got, name)
		w := row.Writ
		if w.Submitted < int64(row.Concurrency) || w.Completed != w.Submitted || w.Failed != 0 || w.Latency.N != int(w.Completed) {
			t.Errorf("%s: %d submitted, %d completed, %d failed, %d timed", name, w.Submitted, w.Completed, w.Failed, w.Latency.N)
		}
		if w.PerSecond <= 0 || w.CPU < 0 || w.CPUPerOp != w.CPU/time.Duration(w.Completed) {
			t.Errorf("%s: %.1f/s, CPU %v, %v per intent", name, w.PerSecond, w.CPU, w.CPUPerOp)
		}
		if g := roles(w.CPUByProcess); !slices.Equal(g, procs[row.Setup]) {
			t.Errorf("%s: CPU of %v, want %v", name, g, procs[row.Setup])
		}
		if h := row.HTTPS; h.Completed < 1 || h.Completed != h.Submitted || h.Failed != 0 || !slices.Equal(roles(h.CPUByProcess), []string{"echo-server"}) {
			t.Errorf("%s: https floor %+v", name, h)
		}
		if sb := row.Sandbox; (row.Agent == "wasm") != (sb != nil) || (sb != nil && (sb.Completed < 1 || !slices.Equal(roles(sb.CPUByProcess), []string{"sandbox"}))) {
			t.Errorf("%s: sandbox floor %+v", name, sb)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
