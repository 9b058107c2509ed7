package wasm

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// FuzzPrepareImage: whatever the bytes, prepareImage does not panic; a
// module it rewrites is accepted by wazero exactly when the original is,
// and instantiated (without running it) has the same memory.
func FuzzPrepareImage(f *testing.F) {
	f.Add(imageModule(false))
	f.Add(imageModule(true))
	f.Add(dirtyModule())
	f.Add(module(sec(5, 0x01, 0x00, 0x01), sec(11, 0x02, 0x00, 0x41, 0x10, 0x0b, 0x01, 'x', 0x01, 0x01, 'y')))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithMemoryLimitPages(16).WithCloseOnContextDone(true)) // a start function may spin
	defer rt.Close(ctx)
	var pool memoryPool
	defer pool.close()
	f.Fuzz(func(t *testing.T, bin []byte) {
		img := prepareImage(bin)
		if img == nil {
			return
		}
		if uint64(len(img.data)) > uint64(len(bin))+maxImageSlack {
			t.Fatalf("an image of %d bytes for a module of %d", len(img.data), len(bin))
		}
		if prepareImage(img.bin) != nil {
			t.Fatal("the rewritten module still has active data segments")
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		memory := func(ctx context.Context, bin []byte) ([]byte, error) {
			mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				return nil, err
			}
			defer mod.Close(ctx)
			b, _ := mod.Memory().Read(0, mod.Memory().Size())
			return bytes.Clone(b), nil
		}
		want, werr := memory(ctx, bin)
		mem := pool.forRun(img.data)
		defer mem.release()
		got, gerr := memory(experimental.WithMemoryAllocator(ctx, mem), img.bin)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("the original: %v; rewritten: %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the image's memory (%d bytes) differs from wazero's (%d bytes)", len(got), len(want))
		}
	})
}

// FuzzPrepareReactor: whatever the bytes, prepareReactor does not panic; a
// module it rewrites is accepted by wazero exactly when the original is,
// exports as many functions, and, instantiated, exports each global it
// names as a mutable global.
func FuzzPrepareReactor(f *testing.F) {
	f.Add(reactorModule(reactorOptions{}))
	f.Add(prepareImage(reactorModule(reactorOptions{})).bin)
	f.Add(reactorModule(reactorOptions{globals: cat([]byte{0x01, 0x7c, 0x01, 0x44}, make([]byte, 8), []byte{0x0b})}))
	f.Add(reactorModule(reactorOptions{exports: [][]byte{exportEntry("writ.global.0", 2, 0)}}))
	f.Add(reactorModule(reactorOptions{runCode: cat(i32(0), []byte{0xd0, 0x70, 0x26, 0x00}, i32(0))}))
	f.Add(reactorModule(reactorOptions{runCode: cat([]byte{0xfd, 0x0c}, make([]byte, 16), []byte{0x1a}, i32(0))}))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(16))
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, bin []byte) {
		rx := prepareReactor(bin)
		if rx == nil {
			return
		}
		orig, oerr := rt.CompileModule(ctx, bin)
		got, gerr := rt.CompileModule(ctx, rx.bin)
		if (oerr == nil) != (gerr == nil) {
			t.Fatalf("the original: %v; rewritten: %v", oerr, gerr)
		}
		if oerr != nil {
			return
		}
		defer orig.Close(ctx)
		defer got.Close(ctx)
		if len(orig.ExportedFunctions()) != len(got.ExportedFunctions()) {
			t.Fatalf("functions exported: %d, rewritten %d", len(orig.ExportedFunctions()), len(got.ExportedFunctions()))
		}
		mod, err := rt.InstantiateModule(ctx, got, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			return // an element or data segment out of bounds, as in the original
		}
		defer mod.Close(ctx)
		for _, name := range rx.globals {
			if _, ok := mod.ExportedGlobal(name).(api.MutableGlobal); !ok {
				t.Fatalf("%s is not an exported mutable global", name)
			}
		}
	})
}
