package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/writhq/writ/sandbox"
)

// exportEntry is one entry of an export section.
func exportEntry(name string, kind byte, index uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(append(b, name...), kind)
	return binary.AppendUvarint(b, index)
}

// funcBody is a code section entry without locals.
func funcBody(code ...[]byte) []byte {
	body := cat([]byte{0x00}, cat(code...), []byte{0x0b})
	return cat(binary.AppendUvarint(nil, uint64(len(body))), body)
}

// reactorOptions vary reactorModule.
type reactorOptions struct {
	trapInInit bool     // _initialize is unreachable
	spinInInit bool     // _initialize loops forever
	runCode    []byte   // writ_run's instructions instead of its own
	start      bool     // a start section naming _initialize
	globals    []byte   // the global section's contents instead of one mutable i32 (0) and one immutable i32 (9)
	exports    [][]byte // more export entries
}

// reactorModule is a prepared tool: _initialize sets its mutable global 0
// to 7, writes 42 at 100 over the data segment's 1, grows the memory by a
// page and writes 1 at 65636 (100 into the new page); writ_run returns the
// global plus both bytes plus the immutable global 1 (9): 59, and traps
// when run on a memory _initialize did not grow.
func reactorModule(o reactorOptions) []byte {
	store8 := []byte{0x3a, 0x00, 0x00}
	load8 := []byte{0x2d, 0x00, 0x00}
	init := funcBody(
		i32(7), []byte{0x24, 0x00}, // global.set 0
		i32(100), i32(42), store8,
		i32(1), []byte{0x40, 0x00, 0x1a}, // memory.grow; drop
		i32(65636), i32(1), store8,
	)
	if o.trapInInit {
		init = funcBody([]byte{0x00})
	}
	if o.spinInInit {
		init = funcBody([]byte{0x03, 0x40, 0x0c, 0x00, 0x0b}) // loop; br 0; end
	}
	run := funcBody(
		[]byte{0x23, 0x00},            // global.get 0
		i32(100), load8, []byte{0x6a}, // i32.add
		i32(65636), load8, []byte{0x6a},
		[]byte{0x23, 0x01}, []byte{0x6a},
	)
	if o.runCode != nil {
		run = funcBody(o.runCode)
	}
	globals := o.globals
	if globals == nil {
		globals = cat([]byte{0x02, 0x7f, 0x01}, i32(0), []byte{0x0b, 0x7f, 0x00}, i32(9), []byte{0x0b})
	}
	exports := [][]byte{exportEntry(initExport, 0, 0), exportEntry(runExport, 0, 1), exportEntry("memory", 2, 0)}
	exports = append(exports, o.exports...)
	var start []byte
	if o.start {
		start = sec(8, 0x00)
	}
	return module(
		sec(1, 0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x01, 0x7f), // () -> (); () -> i32
		sec(3, 0x02, 0x00, 0x01),
		sec(5, 0x01, 0x00, 0x01), // one memory, one page
		sec(6, globals...),
		sec(7, cat(binary.AppendUvarint(nil, uint64(len(exports))), cat(exports...))...),
		start,
		sec(10, cat([]byte{0x02}, init, run)...),
		sec(11, cat([]byte{0x01, 0x00}, i32(100), []byte{0x0b, 0x01, 0x01})...),
	)
}

// driverWith returns a Driver of DefaultConfig changed by mutate (when
// set), its cache in a fresh directory, closed when t ends.
func driverWith(t testing.TB, mutate func(*Config)) *Driver {
	t.Helper()
	cfg := DefaultConfig()
	cfg.CacheDir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	return d
}

// writeModule writes bin to a file of its own and returns its path.
func writeModule(t testing.TB, bin []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "module.wasm")
	if err := os.WriteFile(path, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrepareReactor(t *testing.T) {
	t.Parallel()
	img := prepareImage(reactorModule(reactorOptions{}))
	if img == nil {
		t.Fatal("the reactor has no memory image")
	}
	rx := prepareReactor(img.bin)
	if rx == nil || len(rx.globals) != 1 || rx.globals[0] != "writ.global.0" {
		t.Fatalf("got %+v, want one exported global writ.global.0", rx)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, rx.bin, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	if g := mod.ExportedGlobal("writ.global.0"); g == nil || g.Get() != 0 {
		t.Fatalf("the exported global: %v", g)
	}

	mutableF64 := cat([]byte{0x01, 0x7c, 0x01, 0x44}, make([]byte, 8), []byte{0x0b})
	if rx := prepareReactor(prepareImage(reactorModule(reactorOptions{globals: mutableF64})).bin); rx == nil || len(rx.globals) != 1 {
		t.Fatalf("a mutable f64: %+v", rx)
	}
	// Instructions the code reader must read through: it still vouches.
	read := cat(i32(0), i32(0), i32(0), []byte{0xfc, 0x0a, 0x00, 0x00}, // memory.copy
		[]byte{0xfd, 0x0c}, make([]byte, 16), []byte{0x1a}, // v128.const; drop
		[]byte{0x02, 0x40, 0x41, 0x00, 0x0e, 0x01, 0x00, 0x00, 0x0b}, // block; br_table
		i32(0), []byte{0x28, 0x02, 0x80, 0x80, 0x04}) // i32.load offset=65536
	if prepareReactor(prepareImage(reactorModule(reactorOptions{runCode: read})).bin) == nil {
		t.Error("a module of ordinary instructions was declined")
	}
	for name, bin := range map[string][]byte{
		"table.set":         reactorModule(reactorOptions{runCode: cat(i32(0), []byte{0xd0, 0x70, 0x26, 0x00}, i32(0))}),
		"table.grow":        reactorModule(reactorOptions{runCode: []byte{0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00}}),
		"data.drop":         reactorModule(reactorOptions{runCode: cat([]byte{0xfc, 0x09, 0x00}, i32(0))}),
		"elem.drop":         reactorModule(reactorOptions{runCode: cat([]byte{0xfc, 0x0d, 0x00}, i32(0))}),
		"an unknown opcode": reactorModule(reactorOptions{runCode: []byte{0x06, 0x40, 0x0b}}),
		"a torn body":       reactorModule(reactorOptions{runCode: []byte{0x41}}),
		"a start section":   reactorModule(reactorOptions{start: true}),
		"a mutable funcref": reactorModule(reactorOptions{globals: []byte{0x01, 0x70, 0x01, 0xd0, 0x70, 0x0b}}),
		"an unknown constant": reactorModule(reactorOptions{globals: cat([]byte{0x01, 0x7f, 0x01}, i32(1), i32(2),
			[]byte{0x6a, 0x0b})}),
		"a name taken":       reactorModule(reactorOptions{exports: [][]byte{exportEntry("writ.global.0", 2, 0)}}),
		"a command":          reactorModule(reactorOptions{exports: [][]byte{exportEntry("_start", 0, 0)}}),
		"no _initialize":     module(sec(7, cat([]byte{0x01}, exportEntry(runExport, 0, 0))...)),
		"writ_run a global":  module(sec(7, cat([]byte{0x02}, exportEntry(runExport, 3, 0), exportEntry(initExport, 0, 0))...)),
		"an imported global": cat(module(sec(2, cat([]byte{0x01, 0x01, 'e', 0x01, 'g', 0x03, 0x7f, 0x00})...)), reactorModule(reactorOptions{})[8:]),
	} {
		if rx := prepareReactor(bin); rx != nil {
			t.Errorf("%s: rewritten, want declined", name)
		}
	}
}

// TestInitImageRestores runs reactorModule through the tier, starting
// each run from the image _initialize left and, with NoInitImage, calling
// _initialize in every run: both see the global, the memory and its size
// as _initialize left them (writ_run returns 59), and no run sees the one
// before it.
func TestInitImageRestores(t *testing.T) {
	t.Parallel()
	path := writeModule(t, reactorModule(reactorOptions{}))
	for _, noImage := range []bool{false, true} {
		d := driverWith(t, func(c *Config) { c.NoInitImage = noImage })
		m := sandbox.Manifest{Name: "reactor", Tier: sandbox.TierWasm, Module: path}
		for range 3 {
			out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: t.TempDir()})
			if err != nil || out.ExitCode != 59 || out.Status != sandbox.StatusError {
				t.Fatalf("NoInitImage %v: exit %d status %s (%s), %v; want exit 59", noImage, out.ExitCode, out.Status, out.Reason, err)
			}
		}
		e, _ := d.engineFor(context.Background(), uint32(sandbox.DefaultLimits().MemoryBytes/65536))
		e.mu.Lock()
		var images int
		for _, c := range e.compiled {
			images += len(c.images)
		}
		e.mu.Unlock()
		if want := map[bool]int{false: 1, true: 0}[noImage]; images != want {
			t.Errorf("NoInitImage %v: %d initialized images, want %d", noImage, images, want)
		}
	}
}

// TestInitImageFailedInit: a reactor whose _initialize traps has no image;
// each run calls _initialize and fails with its trap.
func TestInitImageFailedInit(t *testing.T) {
	t.Parallel()
	path := writeModule(t, reactorModule(reactorOptions{trapInInit: true}))
	d := driverWith(t, nil)
	m := sandbox.Manifest{Name: "trap", Tier: sandbox.TierWasm, Module: path}
	for range 2 {
		out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: t.TempDir()})
		if err != nil || out.Status != sandbox.StatusError || !strings.Contains(out.Reason, "unreachable") {
			t.Fatalf("status %s exit %d reason %q, %v; want the trap", out.Status, out.ExitCode, out.Reason, err)
		}
	}
}

// TestHeapMemoryKeepsImage: a memory that cannot be mapped (the heap
// fallback) starts from an image longer than the module's minimum, as an
// initialized image is, and keeps all of it when restore grows it.
func TestHeapMemoryKeepsImage(t *testing.T) {
	t.Parallel()
	img := bytes.Repeat([]byte{0xab}, 3*65536)
	r := &runMemory{pool: &memoryPool{}, image: img, released: true} // released: the heap
	lm := r.Allocate(65536, 16*65536)
	lm.Reallocate(65536) // wazero's first call: the minimum
	buf := lm.Reallocate(5 * 65536)
	if !bytes.Equal(buf[:len(img)], img) || !bytes.Equal(buf[len(img):], make([]byte, 2*65536)) {
		t.Fatal("the grown heap memory is not the image and then zeros")
	}
}

// TestInitImageWithinLimit: a reactor whose _initialize never returns
// spends the first run's time limit making its image, not the limit twice
// (making it, then calling _initialize in the run): the run times out
// with the making counted in its wall time, and so does the next, which
// calls _initialize itself.
func TestInitImageWithinLimit(t *testing.T) {
	t.Parallel()
	d := driverWith(t, nil)
	m := sandbox.Manifest{Name: "spin", Tier: sandbox.TierWasm, Module: writeModule(t, reactorModule(reactorOptions{spinInInit: true}))}.WithDefaults()
	m.Limits.TimeoutMS = 2000
	for i := range 2 {
		start := time.Now()
		out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Workspace: t.TempDir()})
		took := time.Since(start)
		if err != nil || out.Status != sandbox.StatusTimeout || out.Usage.Wall < 2*time.Second {
			t.Fatalf("run %d: status %s (%s), wall %v, %v; want a timeout after the 2 s limit", i, out.Status, out.Reason, out.Usage.Wall, err)
		}
		if took >= 3500*time.Millisecond {
			t.Fatalf("run %d took %v for a limit of 2 s", i, took)
		}
	}
}
