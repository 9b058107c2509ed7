package wasm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/benchstat"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/tools/echowasm"
	"github.com/writhq/writ/sandbox/wasm"
)

// tinyModule is a hand-assembled WASI module whose _start writes "ok" to
// stdout with one fd_write: the smallest useful tool, so that the benchmark
// measures the tier and not a guest runtime's start-up.
func tinyModule() []byte { return tinyModuleStart(false) }

// tinyModuleStart is tinyModule, with a start section naming the same
// function when start is set: wasm then runs it while instantiating.
func tinyModuleStart(start bool) []byte {
	var b bytes.Buffer
	section := func(id byte, content ...byte) {
		b.WriteByte(id)
		b.WriteByte(byte(len(content)))
		b.Write(content)
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	b.Write([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00})
	// types: 0 = (i32 i32 i32 i32) -> i32, 1 = () -> ()
	section(1, 0x02, 0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00)
	imp := append([]byte{0x01}, name("wasi_snapshot_preview1")...)
	imp = append(imp, name("fd_write")...)
	section(2, append(imp, 0x00, 0x00)...)
	section(3, 0x01, 0x01)       // one function of type 1
	section(5, 0x01, 0x00, 0x01) // one memory, one page
	exp := append([]byte{0x02}, name("_start")...)
	exp = append(exp, 0x00, 0x01)
	exp = append(exp, name("memory")...)
	section(7, append(exp, 0x02, 0x00)...)
	if start {
		section(8, 0x01)
	}
	// fd_write(1, iovs=0, 1, nwritten=8); drop; end
	body := []byte{0x00, 0x41, 0x01, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, 0x0b}
	section(10, append([]byte{0x01, byte(len(body))}, body...)...)
	// memory[0:8] = iovec{buf: 16, len: 2}; memory[16:18] = "ok"
	seg := []byte{16, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'o', 'k'}
	section(11, append([]byte{0x01, 0x00, 0x41, 0x00, 0x0b, byte(len(seg))}, seg...)...)
	return b.Bytes()
}

func BenchmarkTiny(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tiny.wasm")
	if err := os.WriteFile(path, tinyModule(), 0o644); err != nil {
		b.Fatal(err)
	}
	compare(b, path, "ok", `{}`)
}

// BenchmarkFloor runs echowasm's module (testdata/echo.wat): an echo with
// no language runtime and no data, the tier's floor.
func BenchmarkFloor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "echo.wasm")
	if err := os.WriteFile(path, echowasm.Module(), 0o644); err != nil {
		b.Fatal(err)
	}
	compare(b, path, `{"a":1}`, `{"a":1}`)
}

// BenchmarkEcho runs the Go echo tool, whose memory image is 1.2 MB of
// data in thousands of segments.
func BenchmarkEcho(b *testing.B) {
	path := sandboxtest.BuildTool(b, echoPackage, "wasip1", "wasm")
	compare(b, path, `{"a":1}`, `{"a":1}`)
}

// BenchmarkEchoReactor runs the Go echo tool built as a prepared tool
// (-buildmode=c-shared): the tier starts each run from the image its
// _initialize left, so the Go runtime's start is paid once.
func BenchmarkEchoReactor(b *testing.B) {
	path := sandboxtest.BuildReactor(b, echoPackage)
	compare(b, path, `{"a":1}`, `{"a":1}`)
}

// BenchmarkGoEmpty runs a Go module whose main does nothing
// (testdata/goempty): the Go runtime's own start and exit, which every Go
// tool pays inside the guest before its first line runs.
func BenchmarkGoEmpty(b *testing.B) {
	path := sandboxtest.BuildTool(b, "github.com/writhq/writ/sandbox/wasm/testdata/goempty", "wasip1", "wasm")
	compare(b, path, "", `{}`)
}

// compare runs the module alternately through raw wazero (same runtime
// configuration, same compilation cache, module compiled once; a prepared
// tool's _initialize then writ_run called), through the wasm tier with
// NoMemoryImage (wazero applies the data segments at every run), with
// NoInitImage (a prepared tool's _initialize in every run) and through the
// tier, and reports each side's median wall time and CPU per run: p50-us
// and cpu-us (the tier), data-p50-us and data-cpu-us (NoMemoryImage),
// noinit-p50-us and noinit-cpu-us (NoInitImage), raw-p50-us and
// raw-cpu-us, ratio (the tier's p50 over raw's) and over-us (the
// difference). Target: p50-us ≤ 200 for BenchmarkTiny; for
// BenchmarkEcho, p50-us ≤ 300 and cpu-us ≤ 250.
func compare(b *testing.B, path, want, params string) {
	ctx := context.Background()
	cacheDir := b.TempDir()
	d := newDriver(b, cacheDir)
	cfg := wasm.DefaultConfig()
	cfg.CacheDir, cfg.NoMemoryImage = cacheDir, true
	data, err := wasm.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer data.Close(ctx)
	cfg.NoMemoryImage, cfg.NoInitImage = false, true
	noinit, err := wasm.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer noinit.Close(ctx)
	m := sandbox.Manifest{Name: "bench", Tier: sandbox.TierWasm, Module: path}
	ws := b.TempDir()

	cache, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		b.Fatal(err)
	}
	pages := uint32(sandbox.DefaultLimits().MemoryBytes / 65536)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).WithMemoryLimitPages(pages).WithCompilationCache(cache))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	bin, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	compiled, err := rt.CompileModule(ctx, bin)
	if err != nil {
		b.Fatal(err)
	}
	raw := func() error {
		var out bytes.Buffer
		mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").
			WithStdin(bytes.NewReader([]byte(params))).WithStdout(&out))
		if mod != nil {
			defer mod.Close(ctx)
		}
		if err != nil {
			return err
		}
		if mod != nil && mod.ExportedFunction("_start") == nil { // a reactor: nothing of it ran yet
			run := mod.ExportedFunction("writ_run")
			if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
				return err
			}
			if _, err := run.Call(ctx); err != nil {
				return err
			}
		}
		if out.String() != want {
			return fmt.Errorf("raw output %q", out.String())
		}
		return nil
	}
	tier := func(d *wasm.Driver) func() error {
		return func() error {
			out, err := d.Run(ctx, sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: ws})
			if err == nil && (out.Status != sandbox.StatusOK || string(out.Output) != want) {
				err = fmt.Errorf("status %s output %q reason %s", out.Status, out.Output, out.Reason)
			}
			return err
		}
	}
	b.ResetTimer()
	f, err := benchstat.Alternate([]benchstat.Side{{Name: "raw", Run: raw}, {Name: "data", Run: tier(data)},
		{Name: "noinit", Run: tier(noinit)}, {Name: "tier", Run: tier(d)}}, 3, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, s := range f {
		prefix := s.Name + "-"
		if s.Name == "tier" {
			prefix = ""
		}
		b.ReportMetric(us(s.P50), prefix+"p50-us")
		b.ReportMetric(us(s.CPU), prefix+"cpu-us")
	}
	b.ReportMetric(float64(f[3].P50)/float64(max(f[0].P50, 1)), "ratio")
	b.ReportMetric(us(f[3].P50-f[0].P50), "over-us")
}
