package wasm

import (
	"bytes"
	"encoding/binary"
)

// A module's memory image: its linear memory once its active data segments
// are applied, built once per module when it is compiled. wazero applies
// data segments at every instantiation, decoding each segment's offset
// expression again; a Go guest has thousands of segments (its linker
// splits the data at every run of zeros), and applying them was 38 % of a
// run's CPU for the echo tool (docs/performance.md). The tier compiles the module
// without its active data segments and gives each run's memory a copy of
// the image instead (runMemory.Allocate): one copy of the bytes, nothing
// decoded. Each run still gets its own memory.
//
// Only what the tier can prove equivalent is rewritten: one memory,
// defined by the module (not imported, not shared), and every active
// segment at an i32.const offset within the memory's minimum. Anything
// else (a malformed module included) is compiled as it is, and wazero
// applies its segments or reports its error.

// memoryImage is a rewritten module and its memory image.
type memoryImage struct {
	bin  []byte // the module, its active data segments removed
	data []byte // memory[0:len(data)] after the segments; zero beyond
}

// maxImageSlack bounds the image beyond the module's own size: a segment
// at a far offset would otherwise make a small module a large image.
const maxImageSlack = 1 << 20

// prepareImage returns bin rewritten without its active data segments and
// the memory they make, or nil when bin does not qualify (see above).
func prepareImage(bin []byte) *memoryImage {
	var (
		minPages  uint64
		memories  int
		dataCount bool
		dataStart = -1 // the data section, header included
		dataEnd   int
		data      []byte
	)
	ok := eachSection(bin, func(id byte, start, end int, body reader) bool {
		if id != 0 && dataStart >= 0 {
			return false // after the data section: invalid
		}
		switch id {
		case 2: // imports
			_, ok := body.skipImports()
			return ok // false: a memory import, or unreadable
		case 5: // memories
			count, ok := body.uleb()
			if !ok || count != 1 {
				return false
			}
			flags, ok := body.uleb()
			if !ok || flags&^1 != 0 { // shared, 64-bit, unknown
				return false
			}
			if minPages, ok = body.uleb(); !ok {
				return false
			}
			memories++
		case 11:
			dataStart, dataEnd, data = start, end, body.b
		case 12:
			dataCount = true
		}
		return true
	})
	if !ok {
		return nil
	}
	if memories != 1 || dataStart < 0 || minPages > 65536 {
		return nil
	}
	segs, passive, ok := parseData(data)
	if !ok {
		return nil
	}
	var end uint64
	for _, s := range segs {
		if !s.passive {
			end = max(end, s.offset+uint64(len(s.init)))
		}
	}
	if passive == len(segs) || end > minPages*65536 || end > uint64(len(bin))+maxImageSlack {
		return nil
	}
	img := &memoryImage{data: make([]byte, end)}
	for _, s := range segs {
		if !s.passive {
			copy(img.data[s.offset:], s.init)
		}
	}
	out := append([]byte{}, bin[:dataStart]...)
	if passive > 0 || dataCount {
		// Keep the segment indices that memory.init and data.drop name: an
		// active segment becomes an empty passive one, which behaves as a
		// dropped active segment does.
		var sec []byte
		sec = binary.AppendUvarint(sec, uint64(len(segs)))
		for _, s := range segs {
			if s.passive {
				sec = append(sec, 0x01)
				sec = binary.AppendUvarint(sec, uint64(len(s.init)))
				sec = append(sec, s.init...)
			} else {
				sec = append(sec, 0x01, 0x00)
			}
		}
		out = append(out, 11)
		out = binary.AppendUvarint(out, uint64(len(sec)))
		out = append(out, sec...)
	}
	img.bin = append(out, bin[dataEnd:]...)
	return img
}

// eachSection calls visit with each section of the module bin: its id,
// where it starts (its header included) and ends, and its contents. It
// returns false, at once, when bin is not a wasm module, a section runs
// past the end, an id is unknown or repeated (custom sections, id 0, may
// repeat), or visit returns false.
func eachSection(bin []byte, visit func(id byte, start, end int, body reader) bool) bool {
	if len(bin) < 8 || !bytes.Equal(bin[:8], []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}) {
		return false
	}
	var seen [13]bool
	for p := 8; p < len(bin); {
		start := p
		id := bin[p]
		size, n := binary.Uvarint(bin[p+1:])
		if n <= 0 || size > uint64(len(bin)-p-1-n) {
			return false
		}
		p += 1 + n
		body := reader{b: bin[p : p+int(size)]}
		p += int(size)
		if id != 0 && (int(id) >= len(seen) || seen[id]) {
			return false
		}
		seen[id] = true
		if !visit(id, start, p, body) {
			return false
		}
	}
	return true
}

// segment is one data segment.
type segment struct {
	passive bool
	offset  uint64
	init    []byte
}

// parseData reads a data section's segments: passive ones, and active ones
// into memory 0 at an i32.const offset. ok is false for anything else.
func parseData(b []byte) (segs []segment, passive int, ok bool) {
	r := reader{b: b}
	count, ok := r.uleb()
	if !ok || count > uint64(len(b)) {
		return nil, 0, false
	}
	segs = make([]segment, 0, count)
	for range count {
		flags, ok := r.uleb()
		if !ok {
			return nil, 0, false
		}
		var s segment
		switch flags {
		case 0, 2:
			if flags == 2 {
				if mem, ok := r.uleb(); !ok || mem != 0 {
					return nil, 0, false
				}
			}
			if op, ok := r.byte(); !ok || op != 0x41 { // i32.const
				return nil, 0, false
			}
			v, ok := r.sleb32()
			if !ok {
				return nil, 0, false
			}
			if end, ok := r.byte(); !ok || end != 0x0b {
				return nil, 0, false
			}
			s.offset = uint64(uint32(v))
		case 1:
			s.passive = true
			passive++
		default:
			return nil, 0, false
		}
		n, ok := r.uleb()
		if !ok || n > uint64(len(r.b)) {
			return nil, 0, false
		}
		s.init, r.b = r.b[:n], r.b[n:]
		segs = append(segs, s)
	}
	return segs, passive, len(r.b) == 0
}

// reader reads a section's contents.
type reader struct{ b []byte }

func (r *reader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

// uleb reads an unsigned LEB128 of at most 32 bits.
func (r *reader) uleb() (uint64, bool) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 5 || v > 0xffffffff {
		return 0, false
	}
	r.b = r.b[n:]
	return v, true
}

// sleb32 reads a signed LEB128 of at most 32 bits.
func (r *reader) sleb32() (int32, bool) {
	var v int64
	var shift uint
	for i := 0; i < 5; i++ {
		c, ok := r.byte()
		if !ok {
			return 0, false
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, false
			}
			return int32(v), true
		}
	}
	return 0, false
}

func (r *reader) skip(n uint64) bool {
	if n > uint64(len(r.b)) {
		return false
	}
	r.b = r.b[n:]
	return true
}

func (r *reader) name() bool {
	n, ok := r.uleb()
	return ok && r.skip(n)
}

func (r *reader) limits() bool {
	flags, ok := r.uleb()
	if !ok || flags > 3 {
		return false
	}
	if _, ok := r.uleb(); !ok {
		return false
	}
	if flags&1 != 0 {
		_, ok = r.uleb()
	}
	return ok
}

// skipImports reads an import section and counts the globals it imports:
// false when it imports a memory or cannot be read.
func (r *reader) skipImports() (globals int, ok bool) {
	count, ok := r.uleb()
	if !ok {
		return 0, false
	}
	for range count {
		if module, field := r.name(), r.name(); !module || !field {
			return 0, false
		}
		kind, ok := r.byte()
		if !ok {
			return 0, false
		}
		switch kind {
		case 0x00: // function: a type index
			_, ok = r.uleb()
		case 0x01: // table: a reference type and limits
			_, ok = r.byte()
			ok = ok && r.limits()
		case 0x03: // global: a value type and mutability
			ok = r.skip(2)
			globals++
		default: // 0x02 memory, or unknown
			return 0, false
		}
		if !ok {
			return 0, false
		}
	}
	return globals, true
}
