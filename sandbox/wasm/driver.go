package wasm

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/capture"
	"github.com/writhq/writ/sandbox/internal/workspace"
)

// Driver runs WASI modules with wazero.
type Driver struct {
	cfg   Config
	cache wazero.CompilationCache
	err   error // why the tier is unavailable

	mu      sync.Mutex
	engines map[uint32]*engine
	sums    sync.Map // fileid.ID → [32]byte
	memory  memoryPool

	// Close cancels the runs (stop) and waits for them (runs) before it
	// closes the runtimes: closing a runtime under a compilation panics in
	// wazero, and under a guest frees what the guest runs on.
	life   context.Context
	stop   context.CancelFunc
	runs   sync.WaitGroup
	closed bool
}

var _ sandbox.Gated = (*Driver)(nil)

// New returns a wasm-tier Driver using the on-disk compilation cache of cfg.
// A cache directory that cannot be created makes the tier unavailable
// rather than failing New, so that the agent can report why.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, engines: map[uint32]*engine{}}
	d.life, d.stop = context.WithCancel(context.Background())
	if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
		d.err = fmt.Errorf("%w: wasm cache directory: %v", sandbox.ErrUnavailable, err)
		return d, nil
	}
	cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
	if err != nil {
		d.err = fmt.Errorf("%w: wasm compilation cache: %v", sandbox.ErrUnavailable, err)
		return d, nil
	}
	d.cache = cache
	return d, nil
}

// Name returns "wasm".
func (d *Driver) Name() string { return sandbox.TierWasm }

// Available reports whether the compilation cache could be opened.
func (d *Driver) Available() error { return d.err }

// Close stops the runs in progress (they end canceled), waits for them,
// and releases the runtimes and compiled modules. Runs after it are
// refused.
func (d *Driver) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.stop()
	d.runs.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	var err error
	for k, e := range d.engines {
		err = errors.Join(err, e.rt.Close(ctx))
		delete(d.engines, k)
	}
	if d.cache != nil {
		err = errors.Join(err, d.cache.Close(ctx))
	}
	d.memory.close()
	return err
}

// Run implements sandbox.Driver. limits.cpu_seconds becomes a second
// deadline (a module runs on one thread, so CPU time never exceeds wall
// time); pids and open_files do not apply.
func (d *Driver) Run(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	return d.RunGated(ctx, inv, nil)
}

// RunGated implements sandbox.Gated: the module is compiled (or taken from
// the cache) and instantiated (its memory made, its data copied in) before
// gate; its _start runs after. A module with a start section, whose
// function wasm runs while instantiating, has gate called before it is
// instantiated.
func (d *Driver) RunGated(ctx context.Context, inv sandbox.Invocation, gate func() error) (sandbox.Outcome, error) {
	tier := d.Name()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return sandbox.Refuse(tier, fmt.Errorf("%w: the wasm tier is closed", sandbox.ErrUnavailable))
	}
	d.runs.Add(1)
	d.mu.Unlock()
	defer d.runs.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.life, cancel)()
	m, err := sandbox.Preflight(d, inv)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	if len(m.Network) > 0 {
		return sandbox.Refuse(tier, errors.New("the wasm tier has no sockets; a network allowlist needs a command tier"))
	}
	if len(m.ReadOnly) > 0 {
		return sandbox.Refuse(tier, errors.New("the wasm tier grants only the workspace; read_only paths need another tier"))
	}
	params, err := sandbox.ParseParams(inv.Params)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	_ = params
	stdin := inv.Params
	if len(stdin) == 0 {
		stdin = []byte("{}")
	}

	// limits.disk_bytes: for a root agent the workspace is a tmpfs of
	// that size; for any agent the guest's writes are counted (quota.go).
	// A scratch workspace's tmpfs is mounted empty and discarded.
	limit := workspace.Limit
	if inv.Scratch {
		limit = workspace.LimitScratch
	}
	quota, err := limit(inv.Workspace, m.Limits.DiskBytes)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	defer quota.Close()
	ctx, filled := quota.Watch(ctx)
	defer filled()
	ctx, fill := context.WithCancel(ctx)
	defer fill()
	var disk *diskQuota
	switch {
	case m.Limits.DiskBytes <= 0:
	case quota.Fresh():
		// A tmpfs mounted empty for this run: the count starts at nothing,
		// with no walk of it.
		disk = emptyDiskQuota(m.Limits.DiskBytes, fill)
	default:
		if disk, err = newDiskQuota(inv.Workspace, m.Limits.DiskBytes, fill); err != nil {
			return sandbox.Refuse(tier, err)
		}
	}

	pages := uint32(min(m.Limits.MemoryBytes/65536, 65536))
	eng, err := d.engineFor(ctx, pages)
	if err != nil {
		return sandbox.Refuse(tier, err)
	}
	compiled, err := d.module(ctx, eng, m.Module)
	if err != nil {
		return sandbox.Refuse(tier, fmt.Errorf("module %s: %w", m.Module, err))
	}
	defer eng.release(ctx, compiled)
	if gate != nil && compiled.hasStart {
		if err := gate(); err != nil {
			return sandbox.Refuse(tier, err)
		}
		gate = nil
	}
	// The run's time limit counts from here: making (or waiting for) an
	// initialized image is guest code too, and a run of a module whose
	// _initialize spins spends its limit there rather than twice.
	began := time.Now()
	deadline := began.Add(min(m.Limits.Timeout(), time.Duration(m.Limits.CPUSeconds)*time.Second))
	env := envPairs(m, inv.Env)
	img := d.initialized(ctx, deadline, eng, compiled, m, env)
	beforeInstantiate(m.Module)
	out, gateErr := d.instantiate(ctx, deadline, time.Since(began), eng, compiled, img, m, inv, env, stdin, disk, gate)
	if gateErr != nil {
		return sandbox.Refuse(tier, gateErr)
	}
	out.ExecDigest = "sha256:" + hex.EncodeToString(compiled.sum[:])
	full, err := quota.HandBack(filled)
	if err != nil {
		return out, fmt.Errorf("wasm: %w", err)
	}
	out.WorkspaceUntouched = quota.Discarded()
	return sandbox.DiskLimited(out, full || disk != nil && disk.Full(), m.Limits.DiskBytes), nil
}

// beforeInstantiate is called between taking the compiled module and
// instantiating it; a test sets it to let another run evict the module.
var beforeInstantiate = func(module string) {}

// instantiate runs the module: instantiates it, calls gate (when set; its
// error is returned and nothing of the module runs), then its _start.
func (d *Driver) instantiate(ctx context.Context, deadline time.Time, prepared time.Duration, eng *engine, compiled *cached, img *initImage,
	m sandbox.Manifest, inv sandbox.Invocation, env [][2]string, stdin []byte, disk *diskQuota, gate func() error) (sandbox.Outcome, error) {
	out := sandbox.Outcome{Tier: d.Name(), ExitCode: -1}
	wall := m.Limits.Timeout()
	cpu := time.Duration(m.Limits.CPUSeconds) * time.Second
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	var limitHit bool
	onLimit := func() { limitHit = true; cancel() }
	stdout := capture.New(m.Limits.OutputBytes, onLimit)
	stderr := capture.New(m.Limits.OutputBytes, onLimit)

	// Instantiated without running _start, which is called after the gate.
	mc := moduleConfig(runCtx, m.Name, env,
		wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(newConfinedFS(inv.Workspace, disk), "/"),
		bytesReader(stdin), stdout, stderr)
	image := compiled.image
	if img != nil {
		image = img.memory
	}
	mem := d.memory.forRun(image)
	defer mem.release()
	start := time.Now()
	mod, err := eng.rt.InstantiateModule(experimental.WithMemoryAllocator(runCtx, mem), compiled.m, mc)
	if err == nil && img != nil {
		if err = img.restore(mod, compiled.reactor.globals); err != nil {
			mod.Close(ctx)
			return out, err
		}
	}
	if err == nil && gate != nil {
		waited := time.Now()
		if gerr := gate(); gerr != nil {
			mod.Close(ctx)
			return out, gerr
		}
		start = start.Add(time.Since(waited)) // the wall time is the tier's and the tool's, not the gate's
	}
	exitCode := 0
	if err == nil {
		exitCode, err = call(runCtx, mod, compiled, img == nil)
	}
	out.Usage.Wall = time.Since(start) + prepared
	if mod != nil {
		if m := mod.Memory(); m != nil {
			out.Usage.MemoryBytes = int64(m.Size())
		}
		mod.Close(ctx)
	}

	var exit *sys.ExitError
	switch {
	case err == nil:
		out.ExitCode = exitCode
	case errors.As(err, &exit) && exit.ExitCode() != sys.ExitCodeDeadlineExceeded &&
		exit.ExitCode() != sys.ExitCodeContextCanceled:
		out.ExitCode = int(exit.ExitCode())
	default:
		out.Reason = err.Error()
	}
	so, se := stdout.Result(), stderr.Result()
	out.Output, out.OutputHash, out.OutputBytes, out.Truncated = so.Kept, so.Hash, so.Total, so.Truncated || se.Truncated
	out.Stderr, out.StderrBytes = se.Kept, se.Total

	switch {
	case limitHit:
		out.Status, out.Reason = sandbox.StatusOutputLimit, fmt.Sprintf("output above %d bytes", m.Limits.OutputBytes)
	case ctx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusError, "canceled"
	case runCtx.Err() != nil && out.ExitCode < 0:
		out.Status, out.Reason = sandbox.StatusTimeout, "wall"
		if cpu < wall {
			out.Reason = "cpu"
		}
	case out.ExitCode == 0:
		out.Status = sandbox.StatusOK
	default:
		out.Status = sandbox.StatusError
	}
	return out, nil
}

// errNoEntry fails the run of a module that has nothing to run.
var errNoEntry = errors.New("the module exports neither _start nor writ_run (no parameters, an i32 result)")

// call runs the module's entry: _start, or a prepared tool's writ_run,
// after its _initialize when initialize is set and it has one. writ_run's
// result is the exit status.
func call(ctx context.Context, mod api.Module, c *cached, initialize bool) (int, error) {
	if c.entry != runExport {
		f := mod.ExportedFunction(c.entry)
		if f == nil {
			return 0, errNoEntry
		}
		_, err := f.Call(ctx)
		return 0, err
	}
	if initialize && c.initialize {
		if _, err := mod.ExportedFunction(initExport).Call(ctx); err != nil {
			return 0, err
		}
	}
	res, err := mod.ExportedFunction(runExport).Call(ctx)
	if err != nil {
		return 0, err
	}
	return int(uint32(res[0])), nil
}
