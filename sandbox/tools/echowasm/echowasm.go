// Package echowasm assembles the smallest echo tool Writ ships: a WASI
// preview 1 module, a few hundred bytes written out here instruction by
// instruction, that copies standard input to standard output. It is what
// `writ dev` runs when no echo.wasm was built beside the binary, so that a
// binary made with `go install` works end to end, and it is the wasm tier's
// floor in benchmarks (no language runtime to start). testdata/echo.wat is
// its text, which wat2wasm assembles to the same bytes (TestText).
package echowasm

// The module's memory layout: two iovecs, two result words, and the buffer.
const (
	readIOV   = 0    // {buf, bufLen} for fd_read
	nread     = 8    // fd_read's byte count
	writeIOV  = 16   // {ptr, len} for fd_write
	nwritten  = 24   // fd_write's byte count
	buf       = 1024 // the copy buffer
	bufLen    = 32768
	exitError = 1 // the exit status when a WASI call fails
)

// Module returns the module's bytes: imports fd_read, fd_write and proc_exit
// from wasi_snapshot_preview1, exports "memory" (one 64 KiB page) and
// "_start". _start reads stdin in chunks until end of file and writes each
// chunk out whole (retrying short writes); a WASI error exits 1.
func Module() []byte {
	var m []byte
	m = append(m, 0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00)
	m = section(m, 1, vec( // types
		[]byte{0x60, 4, i32, i32, i32, i32, 1, i32}, // 0: (i32 i32 i32 i32) -> i32
		[]byte{0x60, 1, i32, 0},                     // 1: (i32) -> ()
		[]byte{0x60, 0, 0},                          // 2: () -> ()
	))
	m = section(m, 2, vec( // imports: functions 0, 1, 2
		wasiImport("fd_read", 0),
		wasiImport("fd_write", 0),
		wasiImport("proc_exit", 1),
	))
	m = section(m, 3, vec([]byte{2}))       // function 3 has type 2
	m = section(m, 5, vec([]byte{0x00, 1})) // one memory, min 1 page
	m = section(m, 7, vec(export("memory", 0x02, 0), export("_start", 0x00, 3)))
	m = section(m, 10, vec(sized(startBody())))
	return m
}

const i32 = 0x7f

const (
	fdRead, fdWrite, procExit = 0, 1, 2
	localN, localP, localW    = 0, 1, 2
)

// startBody is _start's code: three i32 locals (n, p, w).
func startBody() []byte {
	var c code
	c.b = append(c.b, 1, 3, i32) // one group of three i32 locals
	c.op(0x02, 0x40)             // block $done
	c.op(0x03, 0x40)             //   loop $read
	c.store(readIOV, buf)
	c.store(readIOV+4, bufLen)
	c.call4(fdRead, 0, readIOV, nread)
	c.load(nread)
	c.set(localN)
	c.get(localN)
	c.op(0x45)       //     i32.eqz
	c.op(0x0d, 1)    //     br_if $done (end of file)
	c.constant(buf)  //
	c.set(localP)    //     p = buf
	c.op(0x03, 0x40) //     loop $write
	c.storeLocal(writeIOV, localP)
	c.storeLocal(writeIOV+4, localN)
	c.call4(fdWrite, 1, writeIOV, nwritten)
	c.load(nwritten)
	c.op(0x22, localW) //       local.tee w
	c.op(0x45)         //       i32.eqz: a write of nothing cannot progress
	c.op(0x04, 0x40)   //       if
	c.constant(exitError)
	c.op(0x10, procExit)
	c.op(0x0b) //       end
	c.get(localP)
	c.get(localW)
	c.op(0x6a) //       i32.add
	c.set(localP)
	c.get(localN)
	c.get(localW)
	c.op(0x6b) //       i32.sub
	c.op(0x22, localN)
	c.op(0x0d, 0) //       br_if $write while n != 0
	c.op(0x0b)    //     end $write
	c.op(0x0c, 0) //     br $read
	c.op(0x0b)    //   end $read
	c.op(0x0b)    // end $done
	c.op(0x0b)    // end of function
	return c.b
}

type code struct{ b []byte }

func (c *code) op(b ...byte)        { c.b = append(c.b, b...) }
func (c *code) get(local byte)      { c.op(0x20, local) }
func (c *code) set(local byte)      { c.op(0x21, local) }
func (c *code) constant(v int32)    { c.op(0x41); c.b = sleb(c.b, v) }
func (c *code) load(addr int32)     { c.constant(addr); c.op(0x28, 2, 0) }
func (c *code) store(addr, v int32) { c.constant(addr); c.constant(v); c.op(0x36, 2, 0) }

func (c *code) storeLocal(addr int32, local byte) {
	c.constant(addr)
	c.get(local)
	c.op(0x36, 2, 0)
}

// call4 calls fd_read or fd_write(fd, iovs, 1, result) and exits 1 unless
// the call returned errno 0.
func (c *code) call4(fn byte, fd, iovs, result int32) {
	c.constant(fd)
	c.constant(iovs)
	c.constant(1)
	c.constant(result)
	c.op(0x10, fn)
	c.op(0x04, 0x40) // if errno != 0
	c.constant(exitError)
	c.op(0x10, procExit)
	c.op(0x0b)
}

func wasiImport(name string, typ byte) []byte {
	b := appendName(nil, "wasi_snapshot_preview1")
	b = appendName(b, name)
	return append(b, 0x00, typ)
}

func export(name string, kind, index byte) []byte { return append(appendName(nil, name), kind, index) }

func appendName(b []byte, s string) []byte { return append(uleb(b, uint32(len(s))), s...) }

func sized(b []byte) []byte { return append(uleb(nil, uint32(len(b))), b...) }

func vec(items ...[]byte) []byte {
	b := uleb(nil, uint32(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func section(m []byte, id byte, body []byte) []byte {
	return append(append(m, id), sized(body)...)
}

func uleb(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
