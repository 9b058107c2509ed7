package wasm

import (
	"encoding/binary"
	"strconv"
)

// A prepared tool is a WASI reactor: a module that exports writ_run, a
// function of no parameters returning an i32 (the run's exit status), no
// _start (a command that exports writ_run runs its _start), and usually
// _initialize, which sets the guest up (a Go module built with
// -buildmode=c-shared: the Go runtime's start and the package inits). The
// tier calls _initialize once per module, in an instance of its own, and
// keeps what it leaves: the linear memory and the values of the mutable
// globals (initimage.go). Each run is a fresh instance of the module whose
// memory starts as a copy of that memory and whose globals are set to
// those values before writ_run is called, so a run skips the guest's
// start (2.7 ms of the Go echo's 2.8 ms of CPU).
//
// The image holds memory and globals, not tables nor dropped segments, so
// a module whose code can change those is not given one (code.go).
//
// wazero can set only exported globals, so the tier compiles the module
// with each mutable global exported under a name of its own
// (prepareReactor). Only what it can prove equivalent is rewritten: no
// start section (it would run at every instantiation, over the initialized
// memory), no imported global, every mutable global a number (i32, i64,
// f32, f64), every constant expression one the reader knows, no name
// taken, and no instruction that changes a table or drops a segment. Anything else runs as it is: _initialize, then writ_run, in
// every run.

// Export names of the tier's ABI.
const (
	runExport  = "writ_run"
	initExport = "_initialize"
	// globalExport prefixes the names under which the rewritten module
	// exports its mutable globals; the dots keep them apart from the
	// names a language exports.
	globalExport = "writ.global."
)

// reactor is a module rewritten to export its mutable globals.
type reactor struct {
	bin     []byte
	globals []string // the export names, in the globals' order
}

// prepareReactor returns bin rewritten with every mutable global exported,
// or nil when bin does not export both writ_run and _initialize or does
// not qualify (see above).
func prepareReactor(bin []byte) *reactor {
	var (
		exportStart = -1 // the export section, header included
		exportEnd   int
		exports     []byte
		mutable     []uint64 // the indices of the mutable globals
	)
	ok := eachSection(bin, func(id byte, start, end int, body reader) bool {
		switch id {
		case 2:
			imported, ok := body.skipImports()
			return ok && imported == 0
		case 6:
			var ok bool
			mutable, ok = body.mutableGlobals()
			return ok
		case 7:
			exportStart, exportEnd, exports = start, end, body.b
		case 8: // start
			return false
		case 10:
			return body.codeKeepsTables() // code.go
		}
		return true
	})
	if !ok || exportStart < 0 {
		return nil
	}
	r := reader{b: exports}
	count, ok := r.uleb()
	if !ok {
		return nil
	}
	entries := r.b
	names := map[string]byte{}
	for range count {
		n, ok := r.uleb()
		if !ok || n > uint64(len(r.b)) {
			return nil
		}
		name := string(r.b[:n])
		r.b = r.b[n:]
		kind, ok := r.byte()
		if _, idx := r.uleb(); !ok || !idx {
			return nil
		}
		if _, dup := names[name]; dup {
			return nil
		}
		names[name] = kind
	}
	if len(r.b) != 0 {
		return nil
	}
	for _, fn := range []string{runExport, initExport} {
		if kind, ok := names[fn]; !ok || kind != 0x00 {
			return nil
		}
	}
	if _, command := names["_start"]; command {
		return nil
	}
	rx := &reactor{}
	sec := binary.AppendUvarint(nil, count+uint64(len(mutable)))
	sec = append(sec, entries...)
	for _, g := range mutable {
		name := globalExport + strconv.FormatUint(g, 10)
		if _, taken := names[name]; taken {
			return nil
		}
		sec = binary.AppendUvarint(sec, uint64(len(name)))
		sec = append(sec, name...)
		sec = append(sec, 0x03)
		sec = binary.AppendUvarint(sec, g)
		rx.globals = append(rx.globals, name)
	}
	out := append([]byte{}, bin[:exportStart]...)
	out = append(out, 7)
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	rx.bin = append(out, bin[exportEnd:]...)
	return rx
}

// mutableGlobals reads a global section: the indices of its mutable
// globals, false when a mutable one is not a number or an initializer is
// not a constant expression the reader knows.
func (r *reader) mutableGlobals() ([]uint64, bool) {
	count, ok := r.uleb()
	if !ok {
		return nil, false
	}
	var out []uint64
	for i := range count {
		valType, ok := r.byte()
		if !ok {
			return nil, false
		}
		mut, ok := r.byte()
		if !ok || mut > 1 {
			return nil, false
		}
		if mut == 1 {
			switch valType {
			case 0x7f, 0x7e, 0x7d, 0x7c: // i32 i64 f32 f64
			default:
				return nil, false
			}
			out = append(out, i)
		}
		if !r.constExpr() {
			return nil, false
		}
	}
	return out, len(r.b) == 0
}

// constExpr skips a constant expression up to its end (0x0b).
func (r *reader) constExpr() bool {
	for {
		op, ok := r.byte()
		if !ok {
			return false
		}
		switch op {
		case 0x0b: // end
			return true
		case 0x41, 0x42: // i32.const, i64.const
			if !r.sleb() {
				return false
			}
		case 0x43: // f32.const
			ok = r.skip(4)
		case 0x44: // f64.const
			ok = r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, ok = r.uleb()
		case 0xd0: // ref.null
			_, ok = r.byte()
		default:
			return false
		}
		if !ok {
			return false
		}
	}
}

// sleb skips a signed LEB128 of at most 64 bits.
func (r *reader) sleb() bool {
	for i := 0; i < 10; i++ {
		c, ok := r.byte()
		if !ok {
			return false
		}
		if c&0x80 == 0 {
			return true
		}
	}
	return false
}
