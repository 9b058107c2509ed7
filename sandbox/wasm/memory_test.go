package wasm

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// dirtyModule is a hand-assembled module whose _start grows its memory by a
// page, traps if it finds anything but zero at byte 100 of either page, and
// then writes there: run twice on one pooled mapping, the second run traps
// unless the memory it was given was zeroed.
func dirtyModule() []byte {
	var b bytes.Buffer
	section := func(id byte, content ...byte) {
		b.WriteByte(id)
		b.WriteByte(byte(len(content)))
		b.Write(content)
	}
	b.Write([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00})
	section(1, 0x01, 0x60, 0x00, 0x00) // type 0: () -> ()
	section(3, 0x01, 0x00)             // one function of type 0
	section(5, 0x01, 0x00, 0x01)       // one memory, min one page, no max
	section(7, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00)
	body := []byte{0x00, 0x41, 0x01, 0x40, 0x00, 0x1a}              // memory.grow(1); drop
	for _, at := range [][]byte{{0xe4, 0x00}, {0xe4, 0x80, 0x04}} { // 100, 65536+100
		addr := append([]byte{0x41}, at...)
		body = append(body, addr...)
		body = append(body, 0x28, 0x02, 0x00, 0x04, 0x40, 0x00, 0x0b) // if (i32.load) unreachable
		body = append(body, addr...)
		body = append(body, 0x41, 0xc1, 0x00, 0x36, 0x02, 0x00) // i32.store 65
	}
	body = append(body, 0x0b)
	section(10, append([]byte{0x01, byte(len(body))}, body...)...)
	return b.Bytes()
}

func TestPooledMemoryIsZeroed(t *testing.T) {
	d := driverWith(t, nil)
	mod := filepath.Join(t.TempDir(), "dirty.wasm")
	if err := os.WriteFile(mod, dirtyModule(), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		out, err := d.Run(context.Background(), sandbox.Invocation{Workspace: t.TempDir(),
			Manifest: sandbox.Manifest{Name: "dirty", Tier: sandbox.TierWasm, Module: mod}})
		if err != nil || out.Status != sandbox.StatusOK {
			t.Fatalf("run %d: %v %s %q: the memory it was given was not zero", i, err, out.Status, out.Reason)
		}
		d.memory.mu.Lock()
		idle, bytes := 0, d.memory.idleBytes
		for _, l := range d.memory.idle {
			idle += len(l)
		}
		d.memory.mu.Unlock()
		if idle != 1 || bytes != 2*65536 {
			t.Fatalf("after run %d the pool holds %d mappings, %d bytes touched: want the one run's, 2 pages", i, idle, bytes)
		}
	}
}

func TestMemoryPool(t *testing.T) {
	var p memoryPool
	r := p.forRun(nil)
	lm := r.Allocate(65536, 4<<20)
	first := lm.Reallocate(65536)
	if len(first) != 65536 {
		t.Fatalf("first length %d", len(first))
	}
	grown := lm.Reallocate(3 << 20)
	if unsafe.SliceData(grown) != unsafe.SliceData(first) || len(grown) != 3<<20 {
		t.Fatal("growing moved the memory")
	}
	if lm.Reallocate(4<<20+1) != nil {
		t.Fatal("grew past the maximum")
	}
	for i := range grown {
		grown[i] = 0xaa
	}
	r.release()
	if lm := r.Allocate(0, 4<<20); lm.Reallocate(10) == nil {
		t.Fatal("an allocation after release must still succeed (in the heap)")
	}

	r2 := p.forRun(nil)
	again := r2.Allocate(0, 4<<20).Reallocate(3 << 20)
	if unsafe.SliceData(again) != unsafe.SliceData(first) {
		t.Fatal("the released mapping was not reused")
	}
	for i, c := range again[:cap(again)] {
		if c != 0 {
			t.Fatalf("byte %d of a reused mapping is %#x", i, c)
		}
	}
	r2.release()

	// A mapping touched beyond poolMaxUsed is unmapped, not kept.
	r3 := p.forRun(nil)
	r3.Allocate(0, poolMaxUsed+65536).Reallocate(poolMaxUsed + 65536)
	r3.release()
	p.mu.Lock()
	kept := len(p.idle[poolMaxUsed+65536])
	p.mu.Unlock()
	if kept != 0 {
		t.Fatal("a mapping touched beyond poolMaxUsed was pooled")
	}
	p.close()
	if p.get(4<<20) != nil {
		t.Fatal("a closed pool handed out a mapping")
	}
}

func TestHeapMemory(t *testing.T) {
	h := &heapMemory{max: 4 << 16}
	a := h.Reallocate(1 << 16)
	a[0] = 1
	b := h.Reallocate(3 << 16)
	if len(b) != 3<<16 || b[0] != 1 || b[1<<16] != 0 {
		t.Fatalf("grown to %d, kept %d", len(b), b[0])
	}
	if h.Reallocate(4<<16+1) != nil {
		t.Fatal("grew past the maximum")
	}
}

// TestCloseUnderRun closes the driver while a guest spins: the guest is
// stopped and its memory is unmapped only after it has returned, so that
// the agent's shutdown never faults.
func TestCloseUnderRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CacheDir = testCache(t)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tool := sandboxtest.WasmTool(t)
	run := func(params string) sandbox.Outcome {
		out, _ := d.Run(context.Background(), sandbox.Invocation{Params: jsontext.Value(params), Workspace: t.TempDir(),
			Manifest: sandbox.Manifest{Name: "t", Tier: sandbox.TierWasm, Module: tool}})
		return out
	}
	compiling := make(chan sandbox.Outcome, 1)
	go func() { compiling <- run(`{"op":"echo"}`) }()
	time.Sleep(100 * time.Millisecond) // the first run compiles the module or reads it from the cache
	spinning := make(chan sandbox.Outcome, 1)
	go func() {
		<-compiling
		spinning <- run(`{"op":"spin"}`)
	}()
	time.Sleep(time.Second)
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-spinning:
		if out.Status == sandbox.StatusOK {
			t.Fatalf("a spinning guest ended ok after Close: %+v", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end after Close")
	}
	if out := run(`{"op":"echo"}`); out.Status != sandbox.StatusRefused {
		t.Fatalf("a run after Close: %s %q, want refused", out.Status, out.Reason)
	}
}

// TestMemoryOffHeap: a run of the echo tool (a Go guest, whose runtime
// grows its memory many times while starting) allocates less in the Go
// heap than its linear memory's size. With wazero's default allocator the
// final memory alone is that size, and every growth before it allocated a
// copy.
func TestMemoryOffHeap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CacheDir = testCache(t)
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	echo := sandboxtest.BuildTool(t, "github.com/writhq/writ/sandbox/tools/echo", "wasip1", "wasm")
	run := func() sandbox.Outcome {
		out, err := d.Run(context.Background(), sandbox.Invocation{Params: jsontext.Value(`{"msg":"hi"}`), Workspace: t.TempDir(),
			Manifest: sandbox.Manifest{Name: "echo", Tier: sandbox.TierWasm, Module: echo}})
		if err != nil || out.Status != sandbox.StatusOK {
			t.Fatalf("echo: %v %s %q", err, out.Status, out.Reason)
		}
		return out
	}
	run() // compile
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 5
	var mem int64
	for range n {
		mem += run().Usage.MemoryBytes
	}
	runtime.ReadMemStats(&after)
	heap := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("%d runs: %d bytes of linear memory, %d bytes allocated in the Go heap", n, mem, heap)
	if heap >= mem {
		t.Fatalf("%d runs allocated %d bytes in the Go heap for %d bytes of linear memory", n, heap, mem)
	}
}

func TestHasStartSection(t *testing.T) {
	header := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	for _, c := range []struct {
		name string
		bin  []byte
		want bool
	}{
		{"empty module", header, false},
		{"no start", dirtyModule(), false},
		{"start", append(append([]byte{}, header...), 0x08, 0x01, 0x00), true},
		{"start after a custom section", append(append([]byte{}, header...), 0x00, 0x02, 0x01, 'x', 0x08, 0x01, 0x00), true},
		{"truncated header", header[:5], true},
		{"section longer than the file", append(append([]byte{}, header...), 0x01, 0xff, 0xff, 0x03), true},
		{"bad size", append(append([]byte{}, header...), 0x01, 0x80), true},
	} {
		if got := hasStartSection(c.bin); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
