package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/cmd/writ/internal/mcpserver"
	"github.com/writhq/writ/internal/secretfile"
)

type mcpBenchOptions struct {
	n        int
	echoWasm string
	// prof profiles this process over the timed calls; mcpCPUProfile is
	// handed to the writ mcp child as its --cpuprofile.
	prof          benchProfiles
	mcpCPUProfile string
}

func newBenchMCP(e *env) *cobra.Command {
	var o mcpBenchOptions
	cmd := &cobra.Command{
		Use:   "mcp [--n N] [--echo-wasm FILE]",
		Short: "Latency and calls per second of tools/call through writ mcp, beside the same intents submitted directly",
		Long: `Start 3 servers and one node agent in this process, as writ bench e2e does, and
writ mcp (this binary, over stdio, started by the Go MCP SDK's client as a
desktop host starts it). Then make N calls of the echo tool, alternating: one
through writ mcp (tools/call, answered with the tool's output), one submitted
directly with the Go client (the signed intent with a wait for its final state,
then the output read that a tools/call answer also makes), one through the same
MCP server inside this process over an in-memory transport, and one to the
floor: an MCP server over stdio that only echoes (the same SDK, no Writ). Prints
p50 and p99 and calls per second of each, their difference (the MCP layer's own
cost), and that cost over the floor's round trip.`,
		// It honours -o text (the output contract's annotation, which
		// textOutput sets).
		Annotations: map[string]string{"writ-output": "text"},
		Args:        cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if o.n < 1 || o.n > 100_000 {
				return errors.New("--n must be 1-100000")
			}
			if o.echoWasm == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.echoWasm = filepath.Join(filepath.Dir(exe), "tools", "echo.wasm")
			}
			r, err := benchMCP(e, o)
			if err != nil {
				return err
			}
			if e.output == "json" {
				return e.printJSON(r)
			}
			printMCPBench(e, r)
			return nil
		},
	}
	cmd.Flags().IntVar(&o.n, "n", 200, "calls timed on each side")
	cmd.Flags().StringVar(&o.echoWasm, "echo-wasm", "", "the echo tool as a wasip1 module (default: tools/echo.wasm beside writ)")
	cmd.Flags().StringVar(&o.prof.cpu, "cpuprofile", "", "write a CPU profile of this process (cluster, agent, in-process MCP server and clients) over the timed calls to this file")
	cmd.Flags().StringVar(&o.prof.allocs, "memprofile", "", "write a profile of this process's allocations to this file after the timed calls")
	cmd.Flags().StringVar(&o.mcpCPUProfile, "mcp-cpuprofile", "", "write a CPU profile of the writ mcp process, over its whole life, to this file")
	return cmd
}

type mcpBenchReport struct {
	N     int `json:"n"`
	Procs int `json:"gomaxprocs"`
	// Direct is the submission with a wait for the final state;
	// DirectOutput adds the output read: what a tools/call answer holds.
	Direct       latency `json:"direct_submit"`
	DirectOutput latency `json:"direct_submit_and_output"`
	MCP          latency `json:"mcp_tools_call"`
	// InProcess is the same server in the bench's process, over an
	// in-memory transport.
	InProcess     latency `json:"mcp_in_process_tools_call"`
	InProcessRate float64 `json:"mcp_in_process_calls_per_second"`
	DirectRate    float64 `json:"direct_calls_per_second"`
	MCPRate       float64 `json:"mcp_calls_per_second"`
	// AddedP50 and AddedP99 are MCP minus DirectOutput.
	AddedP50 time.Duration `json:"mcp_added_p50_ns"`
	AddedP99 time.Duration `json:"mcp_added_p99_ns"`
	// MCPProcessCPU is the CPU time (user and system) the writ mcp process
	// spent per tools/call, from /proc (0 where there is none): the layer's
	// own work, which the load of the host does not inflate as it does the
	// latencies.
	MCPProcessCPU time.Duration `json:"mcp_process_cpu_per_call_ns"`
	// InProcessAddedP50 is InProcess minus DirectOutput at p50.
	InProcessAddedP50 time.Duration `json:"mcp_in_process_added_p50_ns"`
	// Floor is a call of an MCP server over stdio that only echoes (writ
	// bench mcp-echo: the same SDK, no Writ): what the pipes, a second
	// process and the SDK cost on this machine. AddedOverFloor is AddedP50
	// over Floor's p50; FloorProcessCPU that server's CPU time per call.
	// PairedAdded and InProcessPairedAdded are the medians, over i, of the
	// i-th call through writ mcp (in process) minus the i-th direct call
	// made right after it: the calls of one i meet the same load, which a
	// difference of two p50s does not ensure on a busy machine.
	PairedAdded          time.Duration `json:"mcp_added_paired_median_ns"`
	InProcessPairedAdded time.Duration `json:"mcp_in_process_added_paired_median_ns"`
	Floor                latency       `json:"floor_stdio_echo"`
	AddedOverFloor       float64       `json:"mcp_added_p50_over_floor_p50"`
	FloorProcessCPU      time.Duration `json:"floor_process_cpu_per_call_ns"`
	// MCPOwn and InProcessOwn are each tools/call's latency minus the
	// time its requests to the control plane were in flight, as writ mcp
	// measured it (_meta writ/control_plane_ns): the part of a call a
	// direct client does not have, call by call, so that the cluster's
	// variations, which dwarf it, cancel. They hold the SDK on both ends,
	// the transport, signing the intent and building the answer.
	MCPOwn       latency `json:"mcp_own_time"`
	InProcessOwn latency `json:"mcp_in_process_own_time"`
	// FloorInMemory is the floor's echo server in this process over an
	// in-memory transport. OwnOverFloorP50 is MCPOwn's p50 minus Floor's,
	// InProcessOwnOverFloorP50 InProcessOwn's minus FloorInMemory's: what
	// Writ adds to an MCP round trip of the same SDK over the same
	// transport.
	FloorInMemory latency `json:"floor_in_memory_echo"`
	// MCPRequests and InProcessRequests are the other part of each call:
	// the time its requests to the control plane were in flight, the same
	// requests DirectOutput times from the bench's process.
	MCPRequests              latency       `json:"mcp_control_plane_requests"`
	InProcessRequests        latency       `json:"mcp_in_process_control_plane_requests"`
	OwnOverFloorP50          time.Duration `json:"mcp_own_over_floor_p50_ns"`
	InProcessOwnOverFloorP50 time.Duration `json:"mcp_in_process_own_over_floor_p50_ns"`
	// OwnOverFloorPaired and InProcessOwnOverFloorPaired are the medians
	// of the same differences taken call by call (own time i minus the
	// floor's call i, made in the same round of calls).
	OwnOverFloorPaired          time.Duration `json:"mcp_own_over_floor_paired_median_ns"`
	InProcessOwnOverFloorPaired time.Duration `json:"mcp_in_process_own_over_floor_paired_median_ns"`
}

func benchMCP(e *env, o mcpBenchOptions) (*mcpBenchReport, error) {
	if _, err := os.Stat(o.echoWasm); err != nil {
		return nil, fmt.Errorf("the echo tool: %w (make build puts it in bin/tools)", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "writ-bench-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ec, stop, err := startEchoCluster(ctx, e, dir, o.echoWasm)
	if err != nil {
		return nil, err
	}
	defer stop()
	creds, leader, caPEM := ec.creds, ec.leader, ec.caPEM
	ca := filepath.Join(dir, "pki", "ca.pem")
	secret, err := decodeSecret(creds.Orchestrator.Secret)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "orchestrator.key")
	if err := secretfile.Write(keyFile, []byte(creds.Orchestrator.Secret+"\n")); err != nil {
		return nil, err
	}
	api := "https://" + leader.Addr().String()
	direct := client.New(api, "")
	if err := direct.TrustCA(caPEM); err != nil {
		return nil, err
	}
	direct.NoProofWait = true
	direct.SignReads(creds.Tenant, creds.Orchestrator.KeyID, secret)

	mcpCmd := exec.Command(exe, "mcp", "--server", api, "--ca", ca, "--key", creds.Orchestrator.KeyID+"="+keyFile,
		"--tenant", creds.Tenant, "--principal", "bench", "--run", "bench-mcp", "--report-control-plane-time")
	if o.mcpCPUProfile != "" {
		mcpCmd.Args = append(mcpCmd.Args, "--cpuprofile", o.mcpCPUProfile)
	}
	mcpCmd.Stderr = e.err
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "writ-bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: mcpCmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting writ mcp: %w", err)
	}
	defer cs.Close()
	// The floor: the same SDK over stdio to a process that only echoes.
	floorCmd := exec.Command(exe, "bench", "mcp-echo")
	floorCmd.Stderr = e.err
	floorCS, err := mcp.NewClient(&mcp.Implementation{Name: "writ-bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: floorCmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("starting the floor's echo server: %w", err)
	}
	defer floorCS.Close()

	// The same server in this process, over an in-memory transport: the
	// MCP layer without the process and the pipes between.
	inCfg := mcpserver.DefaultConfig()
	inClient := client.New(api, "")
	if err := inClient.TrustCA(caPEM); err != nil {
		return nil, err
	}
	inCfg.Client, inCfg.Tenant, inCfg.Principal, inCfg.KeyID, inCfg.Secret, inCfg.Run = inClient, creds.Tenant, "bench", creds.Orchestrator.KeyID, secret, "bench-mcp"
	inCfg.ReportControlPlaneTime = true
	inServer, err := mcpserver.New(inCfg)
	if err != nil {
		return nil, err
	}
	if err := inServer.Sync(ctx); err != nil {
		return nil, err
	}
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	inCtx, stopIn := context.WithCancel(ctx)
	defer stopIn()
	go inServer.Run(inCtx, serverEnd)
	inCS, err := mcp.NewClient(&mcp.Implementation{Name: "writ-bench", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		return nil, err
	}
	defer inCS.Close()
	// The floor's server in this process, over an in-memory transport.
	floorServerEnd, floorClientEnd := mcp.NewInMemoryTransports()
	go echoMCPServer().Run(inCtx, floorServerEnd)
	floorMemCS, err := mcp.NewClient(&mcp.Implementation{Name: "writ-bench", Version: "1"}, nil).Connect(ctx, floorClientEnd, nil)
	if err != nil {
		return nil, err
	}
	defer floorMemCS.Close()

	viaMCP := func(i int) (time.Duration, time.Duration, error) {
		return mcpCall(ctx, cs, fmt.Sprintf("mcp-%d", i), true)
	}
	viaInProcess := func(i int) (time.Duration, time.Duration, error) {
		return mcpCall(ctx, inCS, fmt.Sprintf("mem-%d", i), true)
	}
	viaFloor := func(i int) (time.Duration, time.Duration, error) {
		return mcpCall(ctx, floorCS, fmt.Sprintf("floor-%d", i), false)
	}
	viaFloorMem := func(i int) (time.Duration, time.Duration, error) {
		return mcpCall(ctx, floorMemCS, fmt.Sprintf("floormem-%d", i), false)
	}
	viaClient := func(i int) (submit, withOutput time.Duration, err error) {
		id := fmt.Sprintf("direct-%d-%d", time.Now().UnixNano(), i)
		raw := signBenchIntent(creds.Tenant, creds.Orchestrator.KeyID, secret, id, fmt.Sprintf(`{"msg":"direct-%d"}`, i), nil)
		start := time.Now()
		resp, err := direct.Submit(ctx, raw, nil, 30*time.Second)
		submit = time.Since(start)
		if err == nil && resp.State != "completed" {
			err = fmt.Errorf("ended %s: %+v", resp.State, resp.Error)
		}
		if err == nil {
			_, err = direct.Output(ctx, resp.IntentID)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("intent %s: %w", id, err)
		}
		return submit, time.Since(start), nil
	}
	for i := range 10 { // warm up: connections, the module cache
		for _, via := range []func(int) (time.Duration, time.Duration, error){viaMCP, viaInProcess, viaFloor, viaFloorMem} {
			if _, _, err := via(-1 - i); err != nil {
				return nil, err
			}
		}
		if _, _, err := viaClient(-1 - i); err != nil {
			return nil, err
		}
	}
	var subs, outs, calls, mem, floor, floorMem, own, memOwn, reqs, memReqs []time.Duration
	var directTotal, mcpTotal, memTotal time.Duration
	stopProf, err := o.prof.start()
	if err != nil {
		return nil, err
	}
	defer stopProf()
	cpu0, cpuOK := childCPU(mcpCmd.Process.Pid)
	floorCPU0, floorOK := childCPU(floorCmd.Process.Pid)
	for i := range o.n {
		d, cp, err := viaMCP(i)
		if err != nil {
			return nil, err
		}
		calls, mcpTotal, own, reqs = append(calls, d), mcpTotal+d, append(own, d-cp), append(reqs, cp)
		m, cp, err := viaInProcess(i)
		if err != nil {
			return nil, err
		}
		mem, memTotal, memOwn, memReqs = append(mem, m), memTotal+m, append(memOwn, m-cp), append(memReqs, cp)
		f, _, err := viaFloor(i)
		if err != nil {
			return nil, err
		}
		floor = append(floor, f)
		if f, _, err = viaFloorMem(i); err != nil {
			return nil, err
		}
		floorMem = append(floorMem, f)
		s, w, err := viaClient(i)
		if err != nil {
			return nil, err
		}
		subs, outs, directTotal = append(subs, s), append(outs, w), directTotal+w
	}
	r := &mcpBenchReport{N: o.n, Procs: runtimeProcs(), Direct: percentiles(subs), DirectOutput: percentiles(outs),
		MCP: percentiles(calls), InProcess: percentiles(mem), Floor: percentiles(floor),
		MCPOwn: percentiles(own), InProcessOwn: percentiles(memOwn), FloorInMemory: percentiles(floorMem),
		MCPRequests: percentiles(reqs), InProcessRequests: percentiles(memReqs)}
	r.OwnOverFloorP50 = r.MCPOwn.P50 - r.Floor.P50
	r.InProcessOwnOverFloorP50 = r.InProcessOwn.P50 - r.FloorInMemory.P50
	r.OwnOverFloorPaired, r.InProcessOwnOverFloorPaired = pairedMedian(own, floor), pairedMedian(memOwn, floorMem)
	if cpu1, ok := childCPU(mcpCmd.Process.Pid); ok && cpuOK {
		r.MCPProcessCPU = (cpu1 - cpu0) / time.Duration(o.n)
	}
	if cpu1, ok := childCPU(floorCmd.Process.Pid); ok && floorOK {
		r.FloorProcessCPU = (cpu1 - floorCPU0) / time.Duration(o.n)
	}
	r.DirectRate = float64(o.n) / directTotal.Seconds()
	r.MCPRate = float64(o.n) / mcpTotal.Seconds()
	r.InProcessRate = float64(o.n) / memTotal.Seconds()
	r.AddedP50, r.AddedP99 = r.MCP.P50-r.DirectOutput.P50, r.MCP.P99-r.DirectOutput.P99
	r.InProcessAddedP50 = r.InProcess.P50 - r.DirectOutput.P50
	r.PairedAdded, r.InProcessPairedAdded = pairedMedian(calls, outs), pairedMedian(mem, outs)
	if r.Floor.P50 > 0 {
		r.AddedOverFloor = float64(r.AddedP50) / float64(r.Floor.P50)
	}
	return r, nil
}

// mcpCall makes one echo call of msg and checks its answer. With writ, the
// answer must say how long the call's requests to the control plane took
// (writ mcp --report-control-plane-time), which is returned as cp.
func mcpCall(ctx context.Context, cs *mcp.ClientSession, msg string, writ bool) (took, cp time.Duration, err error) {
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"msg": msg}})
	took = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("tools/call %s: %w", msg, err)
	}
	if len(res.Content) != 1 || res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return 0, 0, fmt.Errorf("tools/call %s: isError %v, %d contents: %q", msg, res.IsError, len(res.Content), text)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != `{"msg":"`+msg+`"}` {
		return 0, 0, fmt.Errorf("tools/call %s: not echoed", msg)
	}
	if writ {
		ns, ok := res.Meta[mcpserver.MetaControlPlaneTime].(float64)
		if !ok || ns <= 0 || time.Duration(ns) > took {
			return 0, 0, fmt.Errorf("tools/call %s: _meta writ/control_plane_ns is %v, not a time within the call's %v", msg, res.Meta[mcpserver.MetaControlPlaneTime], took)
		}
		cp = time.Duration(ns)
	}
	return took, cp, nil
}

func printMCPBench(e *env, r *mcpBenchReport) {
	w := func(format string, a ...any) { fmt.Fprintf(e.out, format+"\n", a...) }
	w("writ bench mcp: 3 servers and one agent on loopback, %d echo calls each way, one at a time, GOMAXPROCS %d", r.N, r.Procs)
	w("%-44s %10s %10s %10s", "", "p50", "p99", "calls/s")
	row := func(name string, l latency, rate string) {
		w("%-44s %10s %10s %10s", name, l.P50.Round(time.Microsecond), l.P99.Round(time.Microsecond), rate)
	}
	row("direct: submit and wait (baseline)", r.Direct, "")
	row("direct: submit, wait, read output (baseline)", r.DirectOutput, fmt.Sprintf("%.0f", r.DirectRate))
	row("writ mcp: tools/call over stdio", r.MCP, fmt.Sprintf("%.0f", r.MCPRate))
	row("  the same server in process, in memory", r.InProcess, fmt.Sprintf("%.0f", r.InProcessRate))
	row("floor: MCP echo server over stdio, no Writ", r.Floor, "")
	row("  the same echo server in process, in memory", r.FloorInMemory, "")
	w("%-44s %10s %10s", "the MCP layer's own cost (stdio)", r.AddedP50.Round(time.Microsecond), r.AddedP99.Round(time.Microsecond))
	w("%-44s %10s", "  in process, in memory", r.InProcessAddedP50.Round(time.Microsecond))
	w("%-44s %10s", "  paired: median of (call i - direct i)", r.PairedAdded.Round(time.Microsecond))
	w("%-44s %10s", "  paired, in process", r.InProcessPairedAdded.Round(time.Microsecond))
	w("%-44s %9.1fx", "  stdio cost over the floor, at p50", r.AddedOverFloor)
	row("writ mcp's own time: call - its requests", r.MCPOwn, "")
	row("  in process, in memory", r.InProcessOwn, "")
	w("%-44s %10s", "  own time over the stdio floor, at p50", r.OwnOverFloorP50.Round(time.Microsecond))
	w("%-44s %10s", "  in process, over the in-memory floor", r.InProcessOwnOverFloorP50.Round(time.Microsecond))
	w("%-44s %10s", "  paired: median of (own i - floor i)", r.OwnOverFloorPaired.Round(time.Microsecond))
	w("%-44s %10s", "  paired, in process", r.InProcessOwnOverFloorPaired.Round(time.Microsecond))
	row("writ mcp's requests to the control plane", r.MCPRequests, "")
	row("  in process", r.InProcessRequests, "")
	if r.MCPProcessCPU > 0 {
		w("%-44s %10s", "writ mcp process CPU per tools/call", r.MCPProcessCPU.Round(time.Microsecond))
	}
	if r.FloorProcessCPU > 0 {
		w("%-44s %10s", "floor process CPU per call", r.FloorProcessCPU.Round(time.Microsecond))
	}
}

// pairedMedian is the median of a[i]-b[i].
func pairedMedian(a, b []time.Duration) time.Duration {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = a[i] - b[i]
	}
	sortDurations(d)
	return d[n/2]
}

// childCPU is the user and system CPU time of process pid so far, from
// /proc/PID/stat.
func childCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return parseProcStat(b)
}

// parseProcStat reads utime and stime (fields 14 and 15, in clock ticks of
// 10 ms, Linux's USER_HZ) from the text of a /proc/PID/stat. The command
// name, field 2, may hold spaces and parentheses: fields are counted from
// its last ')'.
func parseProcStat(b []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 32)
	stime, err2 := strconv.ParseUint(f[12], 10, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
