package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// module assembles a module from its sections, in the order given.
func module(sections ...[]byte) []byte {
	b := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func sec(id byte, content ...byte) []byte {
	return append(binary.AppendUvarint([]byte{id}, uint64(len(content))), content...)
}

// i32 is i32.const v.
func i32(v int32) []byte {
	b := []byte{0x41}
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// trapUnless traps when the i32 on the stack is not want.
func trapUnless(want int32) []byte {
	return cat(i32(want), []byte{0x47, 0x04, 0x40, 0x00, 0x0b}) // i32.ne; if unreachable end
}

// imageModule's _start checks that its memory is as its data segments
// made it (bytes 100 and 101 are "ab" from an active segment, the word at
// 200 is zero) and then writes over both: a run that saw a previous run's
// memory traps. With passive set it also has a passive segment "cd"
// (index 1, after the active one) that it copies to 300 with memory.init,
// checking 300 was zero first, and drops the active segment (data.drop 0):
// the segment indices must survive the rewrite.
func imageModule(passive bool) []byte {
	body := cat(
		i32(100), []byte{0x2d, 0x00, 0x00}, trapUnless('a'), // i32.load8_u
		i32(101), []byte{0x2d, 0x00, 0x00}, trapUnless('b'),
		i32(100), i32('z'), []byte{0x3a, 0x00, 0x00}, // i32.store8
		i32(200), []byte{0x28, 0x02, 0x00}, trapUnless(0), // i32.load
		i32(200), i32(65), []byte{0x36, 0x02, 0x00}, // i32.store
	)
	data := cat([]byte{0x01}, []byte{0x00}, i32(100), []byte{0x0b, 0x02, 'a', 'b'})
	var count []byte
	if passive {
		body = cat(body,
			i32(300), []byte{0x2f, 0x01, 0x00}, trapUnless(0), // i32.load16_u
			i32(300), i32(0), i32(2), []byte{0xfc, 0x08, 0x01, 0x00}, // memory.init 1
			i32(300), []byte{0x2f, 0x01, 0x00}, trapUnless('c'|'d'<<8),
			[]byte{0xfc, 0x09, 0x00}, // data.drop 0
		)
		data = cat([]byte{0x02}, data[1:], []byte{0x01, 0x02, 'c', 'd'})
		count = sec(12, 0x02)
	}
	body = append([]byte{0x00}, append(body, 0x0b)...) // no locals; end
	return module(
		sec(1, 0x01, 0x60, 0x00, 0x00), // type 0: () -> ()
		sec(3, 0x01, 0x00),
		sec(5, 0x01, 0x00, 0x01), // one memory, one page
		sec(7, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00),
		count,
		sec(10, cat([]byte{0x01}, binary.AppendUvarint(nil, uint64(len(body))), body)...),
		sec(11, data...),
	)
}

// TestMemoryImageIsolation runs a module that writes over its data and
// over zero memory three times on one driver: every run starts from the
// image, none sees what the run before it wrote.
func TestMemoryImageIsolation(t *testing.T) {
	for name, passive := range map[string]bool{"active": false, "passive": true} {
		t.Run(name, func(t *testing.T) {
			d := driverWith(t, nil)
			mod := filepath.Join(t.TempDir(), "image.wasm")
			if err := os.WriteFile(mod, imageModule(passive), 0o644); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				out, err := d.Run(context.Background(), sandbox.Invocation{Workspace: t.TempDir(),
					Manifest: sandbox.Manifest{Name: "image", Tier: sandbox.TierWasm, Module: mod}})
				if err != nil || out.Status != sandbox.StatusOK {
					t.Fatalf("run %d: %v %s %q: its memory was not its image", i, err, out.Status, out.Reason)
				}
			}
			var images int
			for _, e := range d.engines {
				for _, c := range e.compiled {
					if len(c.image) == 102 && bytes.Equal(c.image[100:], []byte("ab")) {
						images++
					}
				}
			}
			if images != 1 {
				t.Fatalf("%d compiled modules with the expected image, want 1: the runs did not start from an image", images)
			}
		})
	}
}

// TestMemoryImageMatchesWazero instantiates each module twice without
// running it: as it is, wazero applying its data segments, and rewritten,
// its memory a copy of the image. The memories must be the same bytes.
func TestMemoryImageMatchesWazero(t *testing.T) {
	ctx := context.Background()
	mods := map[string][]byte{
		"active":  imageModule(false),
		"passive": imageModule(true),
		"go echo": nil,
	}
	echo, err := os.ReadFile(sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", "wasip1", "wasm"))
	if err != nil {
		t.Fatal(err)
	}
	mods["go echo"] = echo
	// The interpreter: the memories do not depend on the engine, and it
	// compiles the Go module in a fraction of the compiler's time.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	var pool memoryPool
	defer pool.close()
	memory := func(ctx context.Context, bin []byte) []byte {
		t.Helper()
		mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		b, _ := mod.Memory().Read(0, mod.Memory().Size())
		return bytes.Clone(b)
	}
	for name, bin := range mods {
		img := prepareImage(bin)
		if img == nil {
			t.Fatalf("%s: no image", name)
		}
		if bytes.Equal(img.bin, bin) {
			t.Fatalf("%s: not rewritten", name)
		}
		want := memory(ctx, bin)
		mem := pool.forRun(img.data)
		got := memory(experimental.WithMemoryAllocator(ctx, mem), img.bin)
		mem.release()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the image's memory (%d bytes) differs from wazero's (%d bytes)", name, len(got), len(want))
		}
		t.Logf("%s: module %d bytes, rewritten %d, image %d, memory %d", name, len(bin), len(img.bin), len(img.data), len(want))
	}
}

// TestPrepareImageDeclines: modules the tier cannot prove equivalent are
// left to wazero.
func TestPrepareImageDeclines(t *testing.T) {
	types := sec(1, 0x01, 0x60, 0x00, 0x00)
	mem := sec(5, 0x01, 0x00, 0x01)
	seg := func(expr ...byte) []byte { return sec(11, cat([]byte{0x01, 0x00}, expr, []byte{0x0b, 0x01, 'x'})...) }
	for _, c := range []struct {
		name string
		bin  []byte
	}{
		{"not wasm", []byte("\x7fELF\x02\x01\x01\x00")},
		{"no data", module(types, mem)},
		{"only passive data", module(types, mem, sec(11, 0x01, 0x01, 0x01, 'x'))},
		{"no memory", module(types, seg(i32(0)...))},
		{"imported memory", module(types, sec(2, 0x01, 0x01, 'm', 0x01, 'm', 0x02, 0x00, 0x01), seg(i32(0)...))},
		{"shared memory", module(types, sec(5, 0x01, 0x03, 0x01, 0x01), seg(i32(0)...))},
		{"global offset", module(types, sec(6, 0x01, 0x7f, 0x00, 0x41, 0x00, 0x0b), mem, seg(0x23, 0x00))},
		{"out of bounds", module(types, mem, seg(i32(65536)...))},
		{"negative offset", module(types, mem, seg(i32(-1)...))},
		{"second memory", module(types, sec(5, 0x02, 0x00, 0x01, 0x00, 0x01), seg(i32(0)...))},
		{"memory 1", module(types, mem, sec(11, cat([]byte{0x01, 0x02, 0x01}, i32(0), []byte{0x0b, 0x01, 'x'})...))},
		{"repeated section", module(types, mem, seg(i32(0)...), seg(i32(0)...))},
		{"truncated segment", module(types, mem, sec(11, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x05, 'x'))},
		{"trailing bytes", module(types, mem, sec(11, cat([]byte{0x01, 0x00}, i32(0), []byte{0x0b, 0x01, 'x', 0x00})...))},
		{"section past the end", append(module(types, mem), 0x0b, 0x10, 0x01)},
	} {
		if img := prepareImage(c.bin); img != nil {
			t.Errorf("%s: prepared an image of %d bytes", c.name, len(img.data))
		}
	}
	if prepareImage(module(types, mem, seg(i32(65535)...))) == nil {
		t.Error("a segment ending at the memory's last byte: no image")
	}
}
