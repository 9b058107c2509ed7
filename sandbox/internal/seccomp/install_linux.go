package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InstallThread installs the encoded program (Encode) on the calling OS
// thread alone, after setting no_new_privs on it; every process the thread
// starts afterwards inherits both. The caller MUST have locked its goroutine
// to the thread and MUST never unlock it.
func InstallThread(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > 4096 {
		return fmt.Errorf("seccomp: program of %d bytes", len(prog))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("seccomp: install the filter: %w", e)
	}
	return nil
}
