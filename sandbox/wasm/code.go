package wasm

import "encoding/binary"

// An initialized image keeps a guest's memory and globals, not its tables
// nor which of its data and element segments it dropped: a module whose
// code can change those (table.set, table.grow, table.fill, table.copy,
// table.init, elem.drop, data.drop) would start a run from a state its
// _initialize did not leave. codeKeepsTables reads a code section's
// function bodies, instruction by instruction, and reports whether none of
// them holds such an instruction; it reports false too for anything it
// cannot read (an opcode it does not know included), so that only modules
// it can vouch for get an image. Go's and wasi-libc's modules use none of
// them.

// codeKeepsTables reads a code section (id 10).
func (r *reader) codeKeepsTables() bool {
	count, ok := r.uleb()
	if !ok {
		return false
	}
	for range count {
		size, ok := r.uleb()
		if !ok || size > uint64(len(r.b)) {
			return false
		}
		body := reader{b: r.b[:size]}
		r.b = r.b[size:]
		if !body.bodyKeepsTables() {
			return false
		}
	}
	return len(r.b) == 0
}

// bodyKeepsTables reads one function body: its locals, then its
// instructions to the end of the body.
func (r *reader) bodyKeepsTables() bool {
	groups, ok := r.uleb()
	if !ok {
		return false
	}
	for range groups {
		if _, ok := r.uleb(); !ok {
			return false
		}
		if _, ok := r.byte(); !ok {
			return false
		}
	}
	end := false
	for len(r.b) > 0 {
		end = r.b[0] == 0x0b
		if !r.instruction() {
			return false
		}
	}
	return end // a body ends with end
}

// instruction reads one instruction and its immediates: false when it
// changes a table or drops a segment, or is not one the reader knows.
func (r *reader) instruction() bool {
	op, ok := r.byte()
	if !ok {
		return false
	}
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b,
		op == 0xd1, op >= 0x45 && op <= 0xc4:
		return true // no immediate
	case op >= 0x02 && op <= 0x04: // block, loop, if: a block type
		return r.sleb()
	case op == 0x0c, op == 0x0d, op == 0x10, op == 0x12, op >= 0x20 && op <= 0x24,
		op == 0x25, op == 0xd2: // a label, function, local, global or table index
		_, ok = r.uleb()
		return ok
	case op == 0x0e: // br_table
		n, ok := r.uleb()
		for i := uint64(0); ok && i <= n; i++ {
			_, ok = r.uleb()
		}
		return ok
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect
		_, ok = r.uleb()
		if ok {
			_, ok = r.uleb()
		}
		return ok
	case op == 0x1c: // select with types
		n, ok := r.uleb()
		return ok && r.skip(n)
	case op >= 0x28 && op <= 0x3e: // loads and stores
		return r.memarg()
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		_, ok = r.uleb()
		return ok
	case op == 0x41, op == 0x42: // i32.const, i64.const
		return r.sleb()
	case op == 0x43:
		return r.skip(4)
	case op == 0x44:
		return r.skip(8)
	case op == 0xd0: // ref.null
		_, ok = r.byte()
		return ok
	case op == 0xfc:
		return r.miscInstruction()
	case op == 0xfd:
		return r.vectorInstruction()
	case op == 0xfe:
		return r.atomicInstruction()
	}
	return false // table.set (0x26) among them
}

// miscInstruction reads the rest of an 0xfc instruction.
func (r *reader) miscInstruction() bool {
	sub, ok := r.uleb()
	if !ok {
		return false
	}
	switch {
	case sub <= 7: // saturating truncations
		return true
	case sub == 8: // memory.init: a data index and a memory
		_, ok = r.uleb()
		if ok {
			_, ok = r.byte()
		}
		return ok
	case sub == 10: // memory.copy: two memories
		return r.skip(2)
	case sub == 11: // memory.fill: a memory
		return r.skip(1)
	case sub == 16: // table.size
		_, ok = r.uleb()
		return ok
	}
	return false // data.drop, table.init, elem.drop, table.copy, table.grow, table.fill, unknown
}

// vectorInstruction reads the rest of an 0xfd (SIMD) instruction.
func (r *reader) vectorInstruction() bool {
	sub, ok := r.uleb()
	if !ok {
		return false
	}
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		return r.memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 21 && sub <= 34: // extract and replace lane
		return r.skip(1)
	case sub >= 84 && sub <= 91: // load and store lane
		return r.memarg() && r.skip(1)
	case sub <= 0xff: // the rest of SIMD: no immediate
		return true
	}
	return false
}

// atomicInstruction reads the rest of an 0xfe (threads) instruction.
func (r *reader) atomicInstruction() bool {
	sub, ok := r.uleb()
	if !ok {
		return false
	}
	switch {
	case sub == 3: // atomic.fence
		return r.skip(1)
	case sub <= 2, sub >= 0x10 && sub <= 0x4e: // notify, waits, loads, stores, read-modify-writes
		return r.memarg()
	}
	return false
}

// memarg reads a memory argument: an alignment (whose bit 6 says a memory
// index follows, with multiple memories) and an offset.
func (r *reader) memarg() bool {
	align, ok := r.uleb()
	if !ok {
		return false
	}
	if align&0x40 != 0 {
		if _, ok := r.uleb(); !ok {
			return false
		}
	}
	_, ok = r.uleb64()
	return ok
}

// uleb64 reads an unsigned LEB128 of at most 64 bits (a memory offset).
func (r *reader) uleb64() (uint64, bool) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, false
	}
	r.b = r.b[n:]
	return v, true
}
