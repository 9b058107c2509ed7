package wasm

// heapMemory is a linear memory in the Go heap, grown the way wazero's
// default allocator grows it: what runMemory falls back to. Its bytes past
// the length, up to the capacity, are the image or zero (an initialized
// image is longer than the module's minimum memory), and growing keeps
// them: wazero never shrinks a memory.
type heapMemory struct {
	buf []byte
	max uint64
}

func (h *heapMemory) Reallocate(size uint64) []byte {
	switch {
	case size > h.max:
		return nil
	case size > uint64(cap(h.buf)):
		grown := make([]byte, size, min(max(size, 2*uint64(cap(h.buf))), h.max))
		copy(grown, h.buf[:cap(h.buf)])
		h.buf = grown
	default:
		h.buf = h.buf[:size]
	}
	return h.buf
}

func (h *heapMemory) Free() { h.buf = nil }
