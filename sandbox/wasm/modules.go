package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/writhq/writ/sandbox/internal/fileid"
)

// engine is one wazero runtime (they differ only by memory limit) and the
// modules compiled for it.
type engine struct {
	rt       wazero.Runtime
	mu       sync.Mutex
	compiled map[[32]byte]*cached
}

// cached is a compiled module and the runs instantiating it. An evicted
// module is closed once its last run is done: closing it under a run that
// is about to instantiate it fails that run.
type cached struct {
	m          wazero.CompiledModule
	image      []byte // its memory after its active data segments, or nil (image.go)
	hasStart   bool   // a start section: wasm runs its function while instantiating
	entry      string // what a run calls: writ_run when exported as reactor.go says, else _start
	initialize bool   // it exports _initialize, which a run without an initialized image calls first
	reactor    *reactor
	images     map[string]*initImage // by initKey; under the engine's mu
	sum        [32]byte
	users      int
	evicted    bool
}

// release ends one run's use of c.
func (e *engine) release(ctx context.Context, c *cached) {
	e.mu.Lock()
	c.users--
	closeIt := c.evicted && c.users == 0
	e.mu.Unlock()
	if closeIt {
		c.m.Close(ctx)
	}
}

// engineFor returns the runtime for a memory limit, creating it once.
func (d *Driver) engineFor(ctx context.Context, pages uint32) (*engine, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.engines[pages]; ok {
		return e, nil
	}
	cfg := wazero.NewRuntimeConfig()
	if d.cfg.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	// Always: without it a guest that spins ignores its deadline and holds
	// up the host's garbage collector.
	cfg = cfg.WithCloseOnContextDone(true).WithMemoryLimitPages(pages).WithCompilationCache(d.cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasm: wasi: %w", err)
	}
	e := &engine{rt: rt, compiled: map[[32]byte]*cached{}}
	d.engines[pages] = e
	return e, nil
}

// module returns the compiled module at path, reading the file only when
// it changed and compiling only new content, held for one run: the caller
// calls e.release when the run is done.
func (d *Driver) module(ctx context.Context, e *engine, path string) (*cached, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id, err := fileid.Of(f)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	use := func(c *cached) *cached { c.users++; return c }
	if sum, ok := d.sums.Load(id); ok {
		if c, ok := e.compiled[sum.([32]byte)]; ok {
			return use(c), nil
		}
	}
	const maxModule = 256 << 20
	if id.Size > maxModule {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxModule)
	}
	bin := make([]byte, id.Size)
	if _, err := f.ReadAt(bin, 0); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(bin)
	d.sums.Store(id, sum)
	if c, ok := e.compiled[sum]; ok {
		return use(c), nil
	}
	// Compiled without its active data segments when it has a memory
	// image: each run's memory starts as a copy of the image instead.
	// A prepared tool's mutable globals are exported as well, so that
	// its runs can start from an initialized image (reactor.go).
	code, image := bin, []byte(nil)
	var rx *reactor
	if !d.cfg.NoMemoryImage {
		if img := prepareImage(bin); img != nil {
			code, image = img.bin, img.data
			if !d.cfg.NoInitImage {
				if rx = prepareReactor(code); rx != nil {
					code = rx.bin
				}
			}
		}
	}
	m, err := e.rt.CompileModule(ctx, code)
	if err != nil {
		return nil, err
	}
	if len(e.compiled) >= d.cfg.MaxModules {
		for k, old := range e.compiled { // evict one; the disk cache keeps it
			delete(e.compiled, k)
			old.evicted = true
			if old.users == 0 {
				old.m.Close(ctx)
			}
			break
		}
	}
	c := &cached{m: m, image: image, hasStart: hasStartSection(bin), entry: "_start", sum: sum}
	fns := m.ExportedFunctions()
	if _, command := fns["_start"]; command {
		rx = nil
	} else if f, ok := fns[runExport]; ok && len(f.ParamTypes()) == 0 && len(f.ResultTypes()) == 1 && f.ResultTypes()[0] == api.ValueTypeI32 {
		c.entry = runExport
		if f, ok := fns[initExport]; ok && len(f.ParamTypes()) == 0 && len(f.ResultTypes()) == 0 {
			c.initialize = true
			c.reactor = rx
		}
	}
	e.compiled[sum] = c
	return use(c), nil
}

// hasStartSection reports whether the module binary has a start section
// (id 8), or cannot be read far enough to tell.
func hasStartSection(bin []byte) bool {
	if len(bin) < 8 {
		return true
	}
	for p := 8; p < len(bin); {
		id := bin[p]
		size, n := binary.Uvarint(bin[p+1:])
		if n <= 0 || size > uint64(len(bin)) {
			return true
		}
		if id == 8 {
			return true
		}
		p += 1 + n + int(size)
	}
	return false
}
