package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/writhq/writ/client"
)

type loadOptions struct {
	setups, agents []string
	concs          []int
	duration       time.Duration
	paramBytes     int
	echoWasm       string
	profDir        string
}

// loadAgents are the agents writ bench load measures: the real agent
// running the echo tool in the wasm tier, and the simulated one.
var loadAgents = []string{"wasm", "sim"}

func newBenchLoad(e *env) *cobra.Command {
	var o loadOptions
	cmd := &cobra.Command{
		Use:   "load [--setups dev,cluster] [--agents wasm,sim] [--concurrency 1,16,64] [--duration 5s]",
		Short: "Completed intents per second and Writ's CPU per intent under concurrent orchestrators, each beside its floors",
		Long: `Start Writ in child processes of this binary, then at each concurrency C run C
orchestrators (goroutines of this process), each signing an echo intent with
--params-bytes of params, submitting it and waiting for its result, one after
another, for --duration. Every submitted intent must complete. Setups:
  dev      writ dev: one server and its node agent in one process, plain HTTP
  cluster  three writ server processes (TLS, Raft, memberlist) and one writ
           agent process; the orchestrators spread over the servers
Agents:
  wasm     the real agent runs the echo tool in the wasm tier (8 at once)
  sim      a simulated agent in this process answers each dispatch at once:
           the Writ processes' CPU is then the control plane's own share
CPU is the user and system time of every Writ child process (servers and
agent), from /proc/PID/stat; this process's own CPU (the orchestrators and
the simulated agent) is not counted. Beside each figure, from the same run:
  https    a bare server in a child process, with the setup's transport
           (plain HTTP for dev; TLS with a server's certificate and the
           API's settings for cluster), that reads each POST of the same
           size and answers a fixed completed response
  sandbox  the echo tool in the wasm tier alone, in a child process, at the
           same concurrency (writ bench sandbox's tier, in a loop)
Ratios: the Writ figure divided by its floor's. The host's one-minute load
average is printed beside each row: other work on the host takes cores from
all of them alike. With --cpuprofile DIR, every child writes a CPU profile
of its life to DIR/ROLE.pprof (go tool pprof -top BINARY DIR/dev.pprof).`,
		// It honours -o text (the output contract's annotation).
		Annotations: map[string]string{outputAnnotation: outputText},
		Args:        cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			r, err := benchLoad(e, o)
			if err != nil {
				return err
			}
			if e.output == "json" {
				return e.printJSON(r)
			}
			printLoad(e, r)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&o.setups, "setups", loadRigNames, "setups to measure: dev, cluster")
	cmd.Flags().StringSliceVar(&o.agents, "agents", loadAgents, "agents to measure: wasm, sim")
	cmd.Flags().IntSliceVar(&o.concs, "concurrency", []int{1, 16, 64}, "concurrent orchestrators")
	cmd.Flags().DurationVar(&o.duration, "duration", 5*time.Second, "time each measurement submits for")
	cmd.Flags().IntVar(&o.paramBytes, "params-bytes", 512, "size of each intent's params")
	cmd.Flags().StringVar(&o.echoWasm, "echo-wasm", "", "the echo tool as a wasip1 module (default: tools/echo.wasm beside writ)")
	cmd.Flags().StringVar(&o.profDir, "cpuprofile", "", "directory where each child process writes a CPU profile of its life (ROLE.pprof)")
	return cmd
}

func (o *loadOptions) validate() error {
	for _, s := range o.setups {
		if !slices.Contains(loadRigNames, s) {
			return fmt.Errorf("--setups: unknown setup %q", s)
		}
	}
	for _, a := range o.agents {
		if !slices.Contains(loadAgents, a) {
			return fmt.Errorf("--agents: unknown agent %q", a)
		}
	}
	if len(o.setups) == 0 || len(o.agents) == 0 || len(o.concs) == 0 {
		return errors.New("--setups, --agents and --concurrency need at least one each")
	}
	for _, c := range o.concs {
		if c < 1 || c > 1024 {
			return fmt.Errorf("--concurrency %d: want 1-1024", c)
		}
	}
	if o.duration < 100*time.Millisecond || o.duration > time.Hour || o.paramBytes < 16 || o.paramBytes > 64<<10 {
		return errors.New("--duration must be 100ms-1h, --params-bytes 16-65536")
	}
	if o.echoWasm == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.echoWasm = filepath.Join(filepath.Dir(exe), "tools", "echo.wasm")
	}
	abs, err := filepath.Abs(o.echoWasm)
	if err != nil {
		return err
	}
	o.echoWasm = abs
	if _, err := os.Stat(o.echoWasm); err != nil {
		return fmt.Errorf("the echo tool: %w (make build puts it in bin/tools)", err)
	}
	if o.profDir != "" {
		if o.profDir, err = filepath.Abs(o.profDir); err != nil {
			return err
		}
		if err := os.MkdirAll(o.profDir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// loadCell is one measurement: what completed, in how long, and the CPU
// the counted processes used meanwhile.
type loadCell struct {
	Submitted  int64         `json:"submitted"`
	Completed  int64         `json:"completed"`
	Failed     int64         `json:"failed"`
	FirstError string        `json:"first_error,omitempty"`
	Seconds    float64       `json:"seconds"`
	PerSecond  float64       `json:"per_second"`
	CPU        time.Duration `json:"cpu_ns"`
	CPUPerOp   time.Duration `json:"cpu_per_op_ns"`
	// CPUByProcess is each counted process's share, by role (dev; s1, s2,
	// s3, agent; echo-server; sandbox).
	CPUByProcess map[string]time.Duration `json:"cpu_by_process_ns"`
	// Allocs and AllocBytes are the heap objects and bytes the counted
	// processes allocated (runtime/metrics, read through $WRIT_ALLOCS);
	// per completed intent, and by process, below.
	Allocs          uint64            `json:"allocs"`
	AllocBytes      uint64            `json:"alloc_bytes"`
	AllocsPerOp     float64           `json:"allocs_per_op"`
	AllocBytesPerOp float64           `json:"alloc_bytes_per_op"`
	AllocsByProcess map[string]uint64 `json:"allocs_by_process"`
	Latency         latency           `json:"latency"`
	Load1           float64           `json:"load1"` // when the measurement ended
}

// loadRow is one setup, agent and concurrency, beside its floors.
type loadRow struct {
	Setup       string   `json:"setup"`
	Agent       string   `json:"agent"`
	Concurrency int      `json:"concurrency"`
	Writ        loadCell `json:"writ"`
	HTTPS       loadCell `json:"https_floor"`
	// CPUxHTTPS is Writ's CPU per intent over the floor's per request;
	// RatexHTTPS Writ's completions per second over the floor's.
	CPUxHTTPS  float64 `json:"cpu_per_op_x_https"`
	RatexHTTPS float64 `json:"per_second_x_https"`
	// With the wasm agent: the tier alone at the same concurrency.
	Sandbox     *loadCell `json:"sandbox_floor,omitempty"`
	CPUxSandbox float64   `json:"cpu_per_op_x_sandbox,omitempty"`
}

// loadIdle is a setup's CPU with nothing submitted.
type loadIdle struct {
	Setup        string                   `json:"setup"`
	CPUPerSecond time.Duration            `json:"cpu_per_second_ns"`
	CPUByProcess map[string]time.Duration `json:"cpu_by_process_ns"`
}

// loadGoal is a target of issue 22 and where the run stands against it.
type loadGoal struct {
	Row     string        `json:"row"`
	Goal    time.Duration `json:"cpu_per_op_goal_ns"`
	Measure time.Duration `json:"cpu_per_op_ns"`
	Met     bool          `json:"met"`
	// Parts, for dev wasm, are what the same run measured of its two
	// parts alone: the wasm tier's run (the sandbox floor) and the control
	// plane's own share (dev sim at the same concurrency). Their sum bounds
	// from below what the row can reach by cutting the agent's own path.
	SandboxPart      time.Duration `json:"sandbox_floor_cpu_per_op_ns,omitzero"`
	ControlPlanePart time.Duration `json:"control_plane_cpu_per_op_ns,omitzero"`
}

type loadReport struct {
	Procs      int     `json:"gomaxprocs"`
	CPUs       int     `json:"cpus"`
	Duration   string  `json:"duration"`
	ParamBytes int     `json:"params_bytes"`
	Counted    string  `json:"counted"`
	Load1Start float64 `json:"load1_start"`
	Load1End   float64 `json:"load1_end"`
	// Idle is each setup's CPU per second with nothing submitted (Raft,
	// gossip, heartbeats, checkpoints), measured for --duration after
	// its start: part of every figure, most of those at concurrency 1.
	Idle  []loadIdle `json:"idle"`
	Rows  []loadRow  `json:"rows"`
	Goals []loadGoal `json:"goals"`
}

const loadCounted = "user+system CPU of the Writ child processes from /proc/PID/stat; the load generator's own CPU (orchestrators, simulated agent) is not counted"

func benchLoad(e *env, o loadOptions) (*loadReport, error) {
	ctx := context.Background()
	rep := &loadReport{Procs: runtime.GOMAXPROCS(0), CPUs: runtime.NumCPU(), Duration: o.duration.String(),
		ParamBytes: o.paramBytes, Counted: loadCounted, Load1Start: loadAvg1()}
	dir, err := os.MkdirTemp("", "writ-bench-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	params := benchLoadParams(o.paramBytes)
	tag := runID()
	progress := func(format string, a ...any) { fmt.Fprintf(e.err, "writ bench load: "+format+"\n", a...) }

	// The sandbox floor, at each concurrency, once for every setup.
	sandboxes := map[int]*loadCell{}
	if slices.Contains(o.agents, "wasm") {
		sb, err := startLoadProc(dir, o.profDir, "sandbox", true, "bench", "load-sandbox", "--echo-wasm", o.echoWasm,
			"--params-bytes", strconv.Itoa(o.paramBytes))
		if err != nil {
			return nil, err
		}
		var ready struct{ Ready bool }
		if err := sb.line(&ready); err != nil || !ready.Ready {
			sb.stop()
			return nil, fmt.Errorf("the sandbox floor did not start: %v (%s)", err, sb.logTail())
		}
		for _, c := range o.concs {
			progress("sandbox floor, %d at once", c)
			cell, err := sandboxCell(sb, c, o.duration)
			if err != nil {
				sb.stop()
				return nil, err
			}
			sandboxes[c] = cell
		}
		sb.stop()
	}
	for _, setup := range o.setups {
		sdir := filepath.Join(dir, setup)
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return nil, err
		}
		progress("starting %s", setup)
		rig, err := startLoadRig(ctx, setup, sdir, o.profDir, o.echoWasm)
		if err != nil {
			return nil, err
		}
		progress("%s idle", setup)
		idle, err := idleCPU(rig, o.duration)
		if err != nil {
			rig.stop()
			return nil, err
		}
		rep.Idle = append(rep.Idle, idle)
		rows, err := benchLoadSetup(ctx, rig, o, params, tag, sandboxes, progress)
		rig.stop()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", setup, err)
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	rep.Load1End = loadAvg1()
	rep.Goals = loadGoals(rep.Rows)
	return rep, nil
}

// loadGoals are issue 22's targets, each against its row of rows when it
// was measured; dev wasm's with its two parts alone from the same rows.
func loadGoals(rows []loadRow) []loadGoal {
	var goals []loadGoal
	for _, g := range []struct {
		setup, agent string
		conc         int
		goal         time.Duration
	}{{"dev", "wasm", 16, 1200 * time.Microsecond}, {"cluster", "sim", 16, 400 * time.Microsecond}} {
		for _, r := range rows {
			if r.Setup != g.setup || r.Agent != g.agent || r.Concurrency != g.conc {
				continue
			}
			lg := loadGoal{Row: fmt.Sprintf("%s %s %d", g.setup, g.agent, g.conc), Goal: g.goal,
				Measure: r.Writ.CPUPerOp, Met: r.Writ.CPUPerOp <= g.goal}
			for _, c := range rows {
				if r.Sandbox != nil && c.Setup == r.Setup && c.Agent == "sim" && c.Concurrency == r.Concurrency {
					lg.SandboxPart, lg.ControlPlanePart = r.Sandbox.CPUPerOp, c.Writ.CPUPerOp
				}
			}
			goals = append(goals, lg)
		}
	}
	return goals
}

// benchLoadSetup measures one running setup at every concurrency: the
// HTTPS floor, then each agent.
func benchLoadSetup(ctx context.Context, rig *loadRig, o loadOptions, params, tag string, sandboxes map[int]*loadCell, progress func(string, ...any)) ([]loadRow, error) {
	echo, err := startLoadProc(rig.dir, "", "echo-server", true, "bench", "load-echo-server", "--cert", rig.tlsCert[0], "--key", rig.tlsCert[1])
	if err != nil {
		return nil, err
	}
	defer echo.stop()
	var hello struct{ URL string }
	if err := echo.line(&hello); err != nil {
		return nil, fmt.Errorf("the echo server: %w", err)
	}
	bare := client.New(hello.URL, "")
	if rig.caPEM != nil {
		if err := bare.TrustCA(rig.caPEM); err != nil {
			return nil, err
		}
	}
	bare.NoProofWait = true
	body := signBenchIntent(rig.tenant, rig.keyID, rig.secret, "bench-load-floor", params, nil)
	post := func(int, int) error {
		resp, err := bare.Submit(ctx, body, nil, time.Minute)
		if err == nil && resp.State != "completed" {
			err = fmt.Errorf("the echo server answered %s", resp.State)
		}
		return err
	}
	var rows []loadRow
	for _, c := range o.concs {
		progress("%s https floor, %d at once", rig.setup, c)
		floor, err := loadMeasure(loadProcs{echo}, c, o.duration, post)
		if err != nil {
			return nil, err
		}
		for _, agent := range o.agents {
			node := rig.agent
			if agent == "sim" {
				node = rig.sim.ID
			}
			progress("%s %s, %d at once", rig.setup, agent, c)
			prefix := fmt.Sprintf("load-%s-%s-%s-%d-", tag, rig.setup, agent, c)
			submit := func(w, i int) error {
				return rig.submit(ctx, w+i, prefix+strconv.Itoa(i), params, node)
			}
			cell, err := loadMeasure(rig.procs, c, o.duration, submit)
			if err != nil {
				return nil, err
			}
			if cell.Failed > 0 || cell.Completed != cell.Submitted {
				return nil, fmt.Errorf("%s %s at %d: %d of %d intents did not complete; first: %s", rig.setup, agent, c,
					cell.Submitted-cell.Completed, cell.Submitted, cell.FirstError)
			}
			row := loadRow{Setup: rig.setup, Agent: agent, Concurrency: c, Writ: *cell, HTTPS: *floor,
				CPUxHTTPS: ratio(float64(cell.CPUPerOp), float64(floor.CPUPerOp)), RatexHTTPS: ratio(cell.PerSecond, floor.PerSecond)}
			if sb := sandboxes[c]; agent == "wasm" && sb != nil {
				row.Sandbox, row.CPUxSandbox = sb, ratio(float64(cell.CPUPerOp), float64(sb.CPUPerOp))
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// idleCPU is the setup's CPU over dur with nothing submitted.
func idleCPU(rig *loadRig, dur time.Duration) (loadIdle, error) {
	idle := loadIdle{Setup: rig.setup, CPUByProcess: map[string]time.Duration{}}
	before, err := rig.procs.cpu()
	if err != nil {
		return idle, err
	}
	start := time.Now()
	time.Sleep(dur)
	after, err := rig.procs.cpu()
	if err != nil {
		return idle, err
	}
	el := time.Since(start)
	var total time.Duration
	for role, d := range after {
		idle.CPUByProcess[role] = d - before[role]
		total += d - before[role]
	}
	idle.CPUPerSecond = time.Duration(float64(total) / el.Seconds())
	return idle, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// loadMeasure warms up (two calls per worker, not counted), then runs f in
// a closed loop of conc workers for dur, and reads the CPU procs used.
func loadMeasure(procs loadProcs, conc int, dur time.Duration, f func(w, i int) error) (*loadCell, error) {
	if err := inParallel(2*conc, conc, func(i int) error { return f(i%conc, -1-i) }); err != nil {
		return nil, fmt.Errorf("warming up: %w", err)
	}
	allocsBefore, err := procs.allocs()
	if err != nil {
		return nil, err
	}
	before, err := procs.cpu()
	if err != nil {
		return nil, err
	}
	r := closedLoop(conc, dur, f)
	after, err := procs.cpu()
	if err != nil {
		return nil, err
	}
	if err := procs.exited(); err != nil {
		return nil, err
	}
	allocsAfter, err := procs.allocs()
	if err != nil {
		return nil, err
	}
	c := &loadCell{Submitted: r.submitted, Completed: r.completed, Failed: r.failed, FirstError: r.firstErr,
		Seconds: r.elapsed.Seconds(), Latency: r.lat, CPUByProcess: map[string]time.Duration{}, Load1: loadAvg1(),
		AllocsByProcess: map[string]uint64{}}
	for role, d := range after {
		c.CPUByProcess[role] = d - before[role]
		c.CPU += d - before[role]
	}
	for role, a := range allocsAfter {
		c.AllocsByProcess[role] = a.Objects - allocsBefore[role].Objects
		c.Allocs += a.Objects - allocsBefore[role].Objects
		c.AllocBytes += a.Bytes - allocsBefore[role].Bytes
	}
	c.finish()
	return c, nil
}

func (c *loadCell) finish() {
	if c.Seconds > 0 {
		c.PerSecond = float64(c.Completed) / c.Seconds
	}
	if c.Completed > 0 {
		c.CPUPerOp = c.CPU / time.Duration(c.Completed)
		c.AllocsPerOp = float64(c.Allocs) / float64(c.Completed)
		c.AllocBytesPerOp = float64(c.AllocBytes) / float64(c.Completed)
	}
}

// sandboxCell runs the sandbox floor's child at conc for dur.
func sandboxCell(sb *loadProc, conc int, dur time.Duration) (*loadCell, error) {
	var warm sandboxLoadRun
	if err := sb.command(fmt.Sprintf("run %d %s", conc, min(dur/5, time.Second)), &warm); err != nil {
		return nil, err
	}
	allocsBefore, err := sb.allocs()
	if err != nil {
		return nil, err
	}
	before, err := sb.cpu()
	if err != nil {
		return nil, err
	}
	var r sandboxLoadRun
	if err := sb.command(fmt.Sprintf("run %d %s", conc, dur), &r); err != nil {
		return nil, err
	}
	after, err := sb.cpu()
	if err != nil {
		return nil, err
	}
	allocsAfter, err := sb.allocs()
	if err != nil {
		return nil, err
	}
	if r.Failed > 0 {
		return nil, fmt.Errorf("the sandbox floor: %d of %d runs failed; first: %s", r.Failed, r.Runs+r.Failed, r.FirstError)
	}
	c := &loadCell{Submitted: r.Runs, Completed: r.Runs, Seconds: r.Elapsed.Seconds(), CPU: after - before,
		CPUByProcess: map[string]time.Duration{"sandbox": after - before}, Latency: latency{N: int(r.Runs), P50: r.P50, P99: r.P99}, Load1: loadAvg1(),
		Allocs: allocsAfter.Objects - allocsBefore.Objects, AllocBytes: allocsAfter.Bytes - allocsBefore.Bytes,
		AllocsByProcess: map[string]uint64{"sandbox": allocsAfter.Objects - allocsBefore.Objects}}
	c.finish()
	return c, nil
}

// byProcess is each process's CPU per completed intent, by role, as
// "s1=2840µs s2=1380µs …".
func byProcess(c loadCell) string {
	if c.Completed == 0 {
		return "-"
	}
	roles := slices.Sorted(maps.Keys(c.CPUByProcess))
	var out []string
	for _, r := range roles {
		out = append(out, fmt.Sprintf("%s=%.0fµs", r, float64(c.CPUByProcess[r])/float64(c.Completed)/float64(time.Microsecond)))
	}
	return strings.Join(out, " ")
}

// allocsByProcess is each process's heap allocations per completed intent,
// by role, as "s1=1234 s2=567 …".
func allocsByProcess(c loadCell) string {
	if c.Completed == 0 || len(c.AllocsByProcess) == 0 {
		return "-"
	}
	var out []string
	for _, r := range slices.Sorted(maps.Keys(c.AllocsByProcess)) {
		out = append(out, fmt.Sprintf("%s=%.0f", r, float64(c.AllocsByProcess[r])/float64(c.Completed)))
	}
	return strings.Join(out, " ")
}

func printLoad(e *env, r *loadReport) {
	fmt.Fprintf(e.out, "writ bench load: %s per measurement, %d-byte params, GOMAXPROCS %d, %d CPUs, load average %.2f at the start, %.2f at the end\n",
		r.Duration, r.ParamBytes, r.Procs, r.CPUs, r.Load1Start, r.Load1End)
	fmt.Fprintf(e.out, "CPU: %s\n", r.Counted)
	for _, i := range r.Idle {
		fmt.Fprintf(e.out, "%s idle (nothing submitted): %.0fms of CPU per second\n", i.Setup, float64(i.CPUPerSecond)/float64(time.Millisecond))
	}
	w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "setup\tagent\tconc\tintents/s\tcpu/intent\tallocs/intent\tKB/intent\tp50\tp99\thttps/s\thttps cpu/req\thttps allocs/req\tcpu x https\trate x https\tsandbox/s\tsandbox cpu/run\tsandbox allocs/run\tcpu x sandbox\tload1\tcpu/intent by process\tallocs/intent by process\t")
	us := func(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
	for _, x := range r.Rows {
		sb := "-\t-\t-\t-"
		if x.Sandbox != nil {
			sb = fmt.Sprintf("%.0f\t%s\t%.0f\t%.2f", x.Sandbox.PerSecond, us(x.Sandbox.CPUPerOp), x.Sandbox.AllocsPerOp, x.CPUxSandbox)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.0f\t%s\t%.0f\t%.1f\t%s\t%s\t%.0f\t%s\t%.0f\t%.2f\t%.2f\t%s\t%.2f\t%s\t%s\t\n", x.Setup, x.Agent, x.Concurrency,
			x.Writ.PerSecond, us(x.Writ.CPUPerOp), x.Writ.AllocsPerOp, x.Writ.AllocBytesPerOp/1024, us(x.Writ.Latency.P50), us(x.Writ.Latency.P99),
			x.HTTPS.PerSecond, us(x.HTTPS.CPUPerOp), x.HTTPS.AllocsPerOp, x.CPUxHTTPS, x.RatexHTTPS, sb, x.Writ.Load1, byProcess(x.Writ), allocsByProcess(x.Writ))
	}
	w.Flush()
	for _, g := range r.Goals {
		met := "not met"
		if g.Met {
			met = "met"
		}
		fmt.Fprintf(e.out, "goal: %s: %s of CPU per intent, goal <= %s: %s\n", g.Row, us(g.Measure), us(g.Goal), met)
		if g.SandboxPart > 0 {
			fmt.Fprintf(e.out, "      its parts alone in this run: the wasm tier %s + the control plane (sim) %s = %s\n",
				us(g.SandboxPart), us(g.ControlPlanePart), us(g.SandboxPart+g.ControlPlanePart))
		}
	}
}
