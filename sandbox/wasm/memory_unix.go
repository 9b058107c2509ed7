//go:build unix

package wasm

import (
	"math"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// Linear memories are allocated outside the Go heap. Each reserves its
// maximum size as address space once, so that memory.grow never copies
// the memory, and the garbage collector neither counts nor scans it. With
// wazero's default allocator each growth copied the whole memory into a
// larger Go slice, and a guest runtime such as Go's grows its memory many
// times while it starts: those copies were a fifth of the agent's CPU
// running the echo tool, and the garbage they left made the collector run
// again and again, pausing everything else in the process.
//
// A run's mappings go back to the driver's pool when it ends, for the next
// run, which zeroes what the last one touched beyond its own image before
// any guest sees it (the image it copies in covers the rest): a fresh
// mapping for every run cost more than the copies (the kernel faulting in
// and zeroing every page the guest touched took 4 ms for the echo tool's
// 3 MB on a 2-core VM), and zeroing at release what the next image
// overwrites anyway was a tenth of a prepared Go tool's run.
//
// Mappings are released once the run has returned, never by wazero's
// Free: wazero frees a module's memory when the module is closed, and
// closing the runtime (the agent shutting down) closes modules whose guest
// may still be running on another goroutine, which must not fault. A
// memory that cannot be mapped is an ordinary Go slice.

const (
	// poolIdleBytes bounds the touched bytes the pool keeps mapped while no
	// run uses them; a mapping beyond it is unmapped instead.
	poolIdleBytes = 64 << 20
	// poolMaxUsed is the most a mapping may have had touched to be pooled:
	// zeroing more costs as much as the kernel's faulting it in again.
	poolMaxUsed = 32 << 20
)

// mapping is one linear memory's reserved address space and how much of it
// may be other than zero (the largest length a guest was given, or the
// image copied in).
type mapping struct {
	mem  []byte
	used uint64
}

// memoryPool holds mappings between runs, by size; Allocate zeroes them.
type memoryPool struct {
	mu        sync.Mutex
	idle      map[int][]*mapping
	idleBytes uint64
	closed    bool
}

func (p *memoryPool) get(size int) *mapping {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.idle[size]; len(l) > 0 {
		m := l[len(l)-1]
		p.idle[size] = l[:len(l)-1]
		p.idleBytes -= m.used
		return m
	}
	return nil
}

// put keeps m, or unmaps it.
func (p *memoryPool) put(m *mapping) {
	if m.used <= poolMaxUsed {
		p.mu.Lock()
		keep := !p.closed && p.idleBytes+m.used <= poolIdleBytes
		if keep {
			if p.idle == nil {
				p.idle = map[int][]*mapping{}
			}
			p.idle[len(m.mem)] = append(p.idle[len(m.mem)], m)
			p.idleBytes += m.used
		}
		p.mu.Unlock()
		if keep {
			return
		}
	}
	unix.Munmap(m.mem)
}

// close unmaps the idle mappings; mappings put after it are unmapped.
func (p *memoryPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, l := range p.idle {
		for _, m := range l {
			unix.Munmap(m.mem)
		}
	}
	p.idle, p.idleBytes = nil, 0
}

// runMemory allocates one run's linear memories.
type runMemory struct {
	pool     *memoryPool
	image    []byte // the module's memory image (image.go), copied into its memory
	mu       sync.Mutex
	mappings []*mapping
	released bool
}

// forRun returns the allocator of one run of a module whose memory image
// is image (nil when it has none).
func (p *memoryPool) forRun(image []byte) *runMemory { return &runMemory{pool: p, image: image} }

// Allocate implements experimental.MemoryAllocator.
// The module's one memory starts as a copy of its image, zero beyond it: a
// fresh mapping, or one from the pool, zeroed past the image as far as a
// run touched it.
func (r *runMemory) Allocate(capacity, maxBytes uint64) experimental.LinearMemory {
	r.mu.Lock()
	defer r.mu.Unlock()
	image := r.image
	r.image = nil
	if uint64(len(image)) > maxBytes {
		image = nil // cannot happen: prepareImage keeps it within the minimum
	}
	if !r.released && maxBytes > 0 && maxBytes <= math.MaxInt {
		m := r.pool.get(int(maxBytes))
		if m == nil {
			b, err := unix.Mmap(-1, 0, int(maxBytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|noReserve)
			if err == nil {
				m = &mapping{mem: b}
			}
		}
		if m != nil {
			copy(m.mem, image)
			if m.used > uint64(len(image)) {
				clear(m.mem[len(image):m.used])
			}
			m.used = uint64(len(image))
			r.mappings = append(r.mappings, m)
			return (*mappedMemory)(m)
		}
	}
	h := &heapMemory{buf: make([]byte, len(image), min(max(capacity, uint64(len(image))), maxBytes)), max: maxBytes}
	copy(h.buf, image)
	return h
}

// release returns the run's mappings to the pool. No guest may run on
// them any more.
func (r *runMemory) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	for _, m := range r.mappings {
		r.pool.put(m)
	}
	r.mappings = nil
}

// mappedMemory is a memory whose maximum is mapped: growing is reslicing.
type mappedMemory mapping

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.mem)) {
		return nil
	}
	m.used = max(m.used, size)
	return m.mem[:size]
}

// Free does nothing: runMemory.release unmaps.
func (m *mappedMemory) Free() {}

var _ experimental.MemoryAllocator = (*runMemory)(nil)
