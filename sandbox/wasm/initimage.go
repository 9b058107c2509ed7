package wasm

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/writhq/writ/sandbox"
)

// An initialized image is what a prepared tool's _initialize leaves
// (reactor.go): its memory and its mutable globals, made once per module
// and per arguments and environment (what a guest reads while it starts,
// and keeps), and given to every run of them.
//
// _initialize runs with nothing of a run: no parameters (stdin is empty),
// its output discarded, and an empty read-only directory where a run's
// workspace will be mounted (at the same path, "/", so that the guest's
// list of preopened directories is the same in every run), under the
// manifest's time and memory limits. It can read the clocks and random
// bytes and nothing else, write nowhere, and reach nothing, so running it
// before the agent's gate (before the run's start is recorded) does no
// work a run could repeat. What it reads is kept: a guest seeding a
// generator from random bytes while it starts (Go's runtime does, for its
// maps and math/rand) has the same seed in every run; crypto/rand reads
// fresh bytes in each.
//
// A module whose _initialize fails (traps, exits, runs out of time) or
// leaves more than maxInitImage of memory has no image: each of its runs
// calls _initialize, then writ_run, and reports what happens. The time
// making an image, or waiting for another run making it, counts in the
// run's limit and its wall time.
type initImage struct {
	ready   chan struct{} // closed once made or failed
	memory  []byte        // the memory, without its zero tail
	pages   uint32        // the memory's size
	globals []uint64      // the mutable globals' values, in reactor.globals order
	err     error         // why there is none
}

// maxInitImage bounds an initialized image: every run copies it.
const maxInitImage = 32 << 20

// maxInitImages bounds the images of one module (one per arguments and
// environment: in an agent, its tool names for the module and its
// configured environment); a module's runs beyond it call _initialize.
const maxInitImages = 8

// emptyDir is what _initialize sees where a run's workspace goes: an
// fs.FS with no file, its root alone.
var emptyDir embed.FS

// initKey names an image by what a guest may read while it starts.
func initKey(args string, env [][2]string) string {
	var b strings.Builder
	b.WriteString(args)
	for _, kv := range env {
		b.WriteByte(0)
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(kv[1])
	}
	return b.String()
}

// initialized returns c's image for m's arguments and env, making it the
// first time (concurrent runs wait for it); nil when c has none, or ctx
// ends or the run's deadline passes first.
func (d *Driver) initialized(ctx context.Context, deadline time.Time, e *engine, c *cached, m sandbox.Manifest, env [][2]string) *initImage {
	if c.reactor == nil || d.cfg.NoInitImage {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	key := initKey(m.Name, env)
	e.mu.Lock()
	img, ok := c.images[key]
	if !ok && len(c.images) >= maxInitImages {
		e.mu.Unlock()
		return nil
	}
	if !ok {
		img = &initImage{ready: make(chan struct{})}
		if c.images == nil {
			c.images = map[string]*initImage{}
		}
		c.images[key] = img
	}
	e.mu.Unlock()
	if !ok {
		d.makeImage(ctx, e, c, m, env, img)
		if img.err != nil && errors.Is(ctx.Err(), context.Canceled) {
			// This run ended (canceled), not _initialize: the next one
			// tries again. One that ran out of time is not retried: its
			// runs call _initialize themselves, within their own limit.
			e.mu.Lock()
			delete(c.images, key)
			e.mu.Unlock()
		}
		close(img.ready)
	}
	select {
	case <-img.ready:
	case <-ctx.Done():
		return nil
	}
	if img.err != nil {
		return nil
	}
	return img
}

// makeImage runs c's _initialize in an instance of its own and keeps what it
// leaves in img.
func (d *Driver) makeImage(ctx context.Context, e *engine, c *cached, m sandbox.Manifest, env [][2]string, img *initImage) {
	mc := moduleConfig(ctx, m.Name, env, wazero.NewFSConfig().WithFSMount(emptyDir, "/"),
		bytes.NewReader(nil), io.Discard, io.Discard)
	mem := d.memory.forRun(c.image)
	defer mem.release()
	mod, err := e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), c.m, mc)
	if err != nil {
		img.err = err
		return
	}
	defer mod.Close(ctx)
	if _, err := mod.ExportedFunction(initExport).Call(ctx); err != nil {
		img.err = fmt.Errorf("%s: %w", initExport, err)
		return
	}
	img.globals = make([]uint64, len(c.reactor.globals))
	for i, name := range c.reactor.globals {
		g := mod.ExportedGlobal(name)
		if g == nil {
			img.err = fmt.Errorf("global %s not exported", name)
			return
		}
		img.globals[i] = g.Get()
	}
	memory := mod.Memory()
	if memory == nil {
		img.err = errors.New("no memory")
		return
	}
	b, _ := memory.Read(0, memory.Size())
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	if end > maxInitImage {
		img.err = fmt.Errorf("an image of %d bytes, more than %d", end, maxInitImage)
		return
	}
	img.memory, img.pages = bytes.Clone(b[:end]), memory.Size()/65536
}

// restore gives a run's instance, whose memory started as a copy of
// img.memory, the size and globals _initialize left.
func (img *initImage) restore(mod api.Module, names []string) error {
	memory := mod.Memory()
	if memory == nil {
		return errors.New("wasm: an initialized image for a module without memory")
	}
	if have := memory.Size() / 65536; have < img.pages {
		if _, ok := memory.Grow(img.pages - have); !ok {
			return errors.New("wasm: the initialized image does not fit the memory limit")
		}
	}
	for i, name := range names {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("wasm: global %s not exported", name)
		}
		g.Set(img.globals[i])
	}
	return nil
}
