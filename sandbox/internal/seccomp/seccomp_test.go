package seccomp

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestEncode: each instruction becomes the 8 bytes of struct sock_filter
// in little-endian order: code (u16), jt, jf (u8), k (u32).
func TestEncode(t *testing.T) {
	t.Parallel()
	p := []Instruction{
		{Code: ldAbs, K: offArch},
		{Code: jeqK, Jt: 1, Jf: 2, K: 0xc000003e},
		{Code: retK, K: retErrno | ePERM},
	}
	b := Encode(p)
	if len(b) != 8*len(p) {
		t.Fatalf("len = %d, want %d", len(b), 8*len(p))
	}
	want := []byte{
		0x20, 0x00, 0, 0, 0x04, 0x00, 0x00, 0x00,
		0x15, 0x00, 1, 2, 0x3e, 0x00, 0x00, 0xc0,
		0x06, 0x00, 0, 0, 0x01, 0x00, 0x05, 0x00,
	}
	if string(b) != string(want) {
		t.Fatalf("Encode = % x\nwant     % x", b, want)
	}
	for i := range p {
		w := b[8*i:]
		got := Instruction{Code: binary.LittleEndian.Uint16(w), Jt: w[2], Jf: w[3], K: binary.LittleEndian.Uint32(w[4:])}
		if got != p[i] {
			t.Fatalf("instruction %d decodes as %+v, want %+v", i, got, p[i])
		}
	}
	if len(Encode(nil)) != 0 {
		t.Fatal("Encode(nil) is not empty")
	}
}

// TestNoTable: an architecture without a syscall table gets no program,
// so that a caller fails closed instead of running unfiltered.
// Not parallel: it swaps the package's table.
func TestNoTable(t *testing.T) {
	saved := table
	defer func() { table = saved }()
	table = syscallTable{}
	if _, err := Program(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Program() err = %v, want ErrUnsupported", err)
	}
	if _, err := ProgramTraced(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ProgramTraced() err = %v, want ErrUnsupported", err)
	}
}

// TestInstallThreadRefusesBadPrograms: a program that is empty, not whole
// instructions, or longer than the kernel's 4096 instructions is refused
// before anything is set on the thread.
func TestInstallThreadRefusesBadPrograms(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 7, 12, 8 * 4097} {
		if err := InstallThread(make([]byte, n)); err == nil {
			t.Errorf("InstallThread accepted a program of %d bytes", n)
		}
	}
}
