package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/bwrap"
	"github.com/writhq/writ/sandbox/internal/benchstat"
	"github.com/writhq/writ/sandbox/runc"
	"github.com/writhq/writ/sandbox/tools/echowasm"
)

// BenchConfig says what `writ bench sandbox` measures.
type BenchConfig struct {
	Tiers    Config
	Names    []string // tiers to measure; nil means all
	N        int      // timed runs of each side
	EchoWasm string   // the echo tool as a wasip1 module (wasm tier)
	Echo     string   // the echo tool as a static host binary (command tiers)
	// WasmVariants also measures the wasm tier with NoMemoryImage (wazero
	// applying the echo module's data segments at every run) and with
	// echowasm's module (no language runtime, no data: the tier's floor).
	WasmVariants bool
}

// BenchResult is one tier's start-to-end time for the echo tool next to
// its raw baseline, both medians of runs alternated in the same process.
// CPU is the process's CPU time per run (user and system, every thread:
// for the wasm tier, which runs in the process, the run itself; for the
// command tiers only the parent's part, the child's is not counted).
type BenchResult struct {
	Tier     string        `json:"tier"`
	Tool     string        `json:"tool"`
	Baseline string        `json:"baseline"`
	P50      time.Duration `json:"p50_ns"`
	RawP50   time.Duration `json:"raw_p50_ns"`
	Ratio    float64       `json:"ratio"`
	CPU      time.Duration `json:"cpu_ns"`
	RawCPU   time.Duration `json:"raw_cpu_ns"`
	Error    string        `json:"error,omitempty"`
}

// Tools in BenchResult.Tool.
const (
	ToolEcho        = "echo"
	ToolEchoNoImage = "echo, no memory image"
	ToolFloor       = "echowasm"
)

const benchParams = `{"bench":"echo"}`

// Bench measures each tier. A tier that cannot run here gets a result with
// Error set; the others are still measured.
func Bench(ctx context.Context, bc BenchConfig) []BenchResult {
	names := bc.Names
	if names == nil {
		names = Names
	}
	var out []BenchResult
	for _, name := range names {
		group := []benchVariant{{ToolEcho, bc}}
		if name == sandbox.TierWasm && bc.WasmVariants {
			noImage := bc
			noImage.Tiers.Wasm.NoMemoryImage = true
			floor := bc
			floor.EchoWasm = ""
			group = append(group, benchVariant{ToolEchoNoImage, noImage}, benchVariant{ToolFloor, floor})
		}
		out = append(out, benchGroup(ctx, name, group)...)
	}
	return out
}

// benchVariant is one tool, or one configuration, measured in a tier.
type benchVariant struct {
	tool string
	bc   BenchConfig // EchoWasm "" (with ToolFloor): echowasm's module
}

// benchGroup measures the variants of one tier in the same rounds, each
// beside its raw baseline: variant by variant, the baseline and then the
// tier, so that their figures come from the same moments of the run.
func benchGroup(ctx context.Context, name string, group []benchVariant) []BenchResult {
	out := make([]BenchResult, len(group))
	var sides []benchstat.Side
	var at []int // out's index of each pair of sides
	for i, v := range group {
		out[i] = BenchResult{Tier: name, Tool: v.tool}
		bc := v.bc
		if v.tool == ToolFloor {
			dir, err := os.MkdirTemp("", "writ-bench-floor-")
			if err != nil {
				out[i].Error = err.Error()
				continue
			}
			defer os.RemoveAll(dir)
			bc.EchoWasm = filepath.Join(dir, "echowasm.wasm")
			if err := os.WriteFile(bc.EchoWasm, echowasm.Module(), 0o600); err != nil {
				out[i].Error = err.Error()
				continue
			}
		}
		raw, tier, cleanup, err := benchPair(ctx, bc, name, &out[i])
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		sides = append(sides, benchstat.Side{Name: "raw " + v.tool, Run: raw}, benchstat.Side{Name: name + " " + v.tool, Run: tier})
		at = append(at, i)
	}
	if len(sides) == 0 {
		return out
	}
	f, err := benchstat.Alternate(sides, 2, group[0].bc.N)
	for k, i := range at {
		r := &out[i]
		if err != nil {
			r.Error = err.Error()
			continue
		}
		raw, tier := f[2*k], f[2*k+1]
		r.RawP50, r.RawCPU, r.P50, r.CPU = raw.P50, raw.CPU, tier.P50, tier.CPU
		r.Ratio = float64(r.P50) / float64(max(r.RawP50, 1))
	}
	return out
}

// benchPair returns the raw baseline and the tier run for one tier.
func benchPair(ctx context.Context, bc BenchConfig, name string, r *BenchResult) (raw, tier func() error, cleanup func(), err error) {
	cfg := bc.Tiers
	work, err := os.MkdirTemp("", "writ-bench-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup = func() { os.RemoveAll(work) }
	ws := filepath.Join(work, "ws")
	os.Mkdir(ws, 0o777)
	os.Chmod(ws, 0o777)
	m := sandbox.Manifest{Name: "echo", Tier: name, Command: &sandbox.Command{Path: bc.Echo}}
	if name == sandbox.TierWasm {
		m.Command, m.Module = nil, bc.EchoWasm
		cfg.Wasm.CacheDir = filepath.Join(work, "cache")
	}
	if name == sandbox.TierRunc {
		cfg.Runc.StateDir = filepath.Join(work, "runc")
	}
	if name == sandbox.TierGvisor {
		cfg.Gvisor.OCI.StateDir = filepath.Join(work, "gvisor")
	}
	d, err := New(name, cfg)
	if err != nil {
		return nil, nil, cleanup, err
	}
	if err := d.Available(); err != nil {
		return nil, nil, cleanup, err
	}
	inv := sandbox.Invocation{Manifest: m, Params: []byte(benchParams), Workspace: ws}
	tier = func() error {
		o, err := d.Run(ctx, inv)
		if err == nil && (o.Status != sandbox.StatusOK || string(o.Output) != benchParams) {
			err = fmt.Errorf("%s: %s %q %q", name, o.Status, o.Output, o.Stderr)
		}
		return err
	}
	command := func(argv ...string) func() error {
		return func() error {
			c := exec.CommandContext(ctx, argv[0], argv[1:]...)
			c.Stdin = bytes.NewReader([]byte(benchParams))
			out, err := c.Output()
			if err == nil && string(out) != benchParams {
				err = fmt.Errorf("raw %s: output %q", name, out)
			}
			return err
		}
	}
	switch name {
	case sandbox.TierProcess:
		r.Baseline = "fork/exec of the echo binary"
		raw = command(bc.Echo)
	case sandbox.TierBwrap:
		r.Baseline = "bwrap --ro-bind / / with the tier's namespaces"
		bin, err := exec.LookPath(cfg.Bwrap.Binary)
		if err != nil {
			return nil, nil, cleanup, err
		}
		raw = command(slices.Concat([]string{bin}, bwrap.Namespaces(cfg.Bwrap.UID, cfg.Bwrap.GID),
			[]string{"--ro-bind", "/", "/", bc.Echo})...)
	case sandbox.TierRunc, sandbox.TierGvisor:
		r.Baseline = "runc run of the same bundle"
		if name == sandbox.TierGvisor {
			r.Baseline = "runsc run of the same bundle"
		}
		rd := d.(*runc.Driver)
		bundle := filepath.Join(work, "bundle")
		os.Mkdir(bundle, 0o700)
		if err := rd.WriteBundle(bundle, "writ-bench-raw", inv); err != nil {
			return nil, nil, cleanup, err
		}
		n := 0
		raw = func() error {
			n++
			return command(slices.Concat([]string{rd.Runtime()}, rd.RuntimeArgs(),
				[]string{"run", "--bundle", bundle, fmt.Sprintf("writ-bench-raw-%d", n)})...)()
		}
	case sandbox.TierWasm:
		r.Baseline = "wazero instantiate and call of the same compiled module"
		raw, err = rawWazero(ctx, bc.EchoWasm, cleanup, &cleanup)
		if err != nil {
			return nil, nil, cleanup, err
		}
	}
	return raw, tier, cleanup, nil
}

// rawWazero compiles the module once and returns a function that
// instantiates it with the parameters on stdin, which runs _start, or, for
// a prepared tool (a reactor: no _start), then calls its _initialize and
// writ_run.
func rawWazero(ctx context.Context, module string, prev func(), cleanup *func()) (func() error, error) {
	b, err := os.ReadFile(module)
	if err != nil {
		return nil, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	*cleanup = func() { rt.Close(ctx); prev() }
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, b)
	if err != nil {
		return nil, err
	}
	return func() error {
		var out bytes.Buffer
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").
			WithStdin(bytes.NewReader([]byte(benchParams))).WithStdout(&out))
		if err == nil && mod.ExportedFunction("_start") == nil {
			if _, err = mod.ExportedFunction("_initialize").Call(ctx); err == nil {
				_, err = mod.ExportedFunction("writ_run").Call(ctx)
			}
		}
		var exit *sys.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 0 {
			err = nil
		}
		if mod != nil {
			mod.Close(ctx)
		}
		if err == nil && out.String() != benchParams {
			err = fmt.Errorf("raw wazero: output %q", out.String())
		}
		return err
	}, nil
}
