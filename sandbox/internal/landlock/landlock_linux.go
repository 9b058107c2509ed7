// Package landlock confines one OS thread, and so every process it starts
// afterwards, to a set of paths with Landlock (Linux 5.13+): read and
// execute below some, read and write below the workspace, TCP connections
// only to some ports (ABI 4+), no signals or abstract sockets outside the
// domain (ABI 6+). It makes the per-thread system calls itself (x/sys/unix
// constants): go-landlock restricts every thread of the calling process, and
// its syscall package links libcap's psx, which under cgo wraps
// pthread_create for the whole binary. The agent itself must stay free.
package landlock

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnsupported means the kernel offers no Landlock (too old, or the LSM
// is not enabled on its command line).
var ErrUnsupported = errors.New("landlock: not supported by this kernel")

// Rules is what a confined thread keeps.
type Rules struct {
	ReadExec  []string // read and execute below these (files or directories)
	ReadWrite []string // read, write, create and remove below these; no device nodes
	Devices   []string // character devices that may be read and written (/dev/null)
	// ConnectTCP lists the only TCP ports connect(2) may reach, when the
	// kernel handles network rights (ABI 4+). Empty denies every TCP
	// connect and bind.
	ConnectTCP []int
}

var (
	abiOnce sync.Once
	abi     int
	abiErr  error
)

// ABI returns the kernel's Landlock ABI version, or ErrUnsupported.
func ABI() (int, error) {
	abiOnce.Do(func() {
		r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		abi = int(r)
		if e != 0 || abi < 1 {
			abi, abiErr = 0, e
			abiErr = fmt.Errorf("%w: %v", ErrUnsupported, abiErr)
		}
	})
	return abi, abiErr
}

// fsRights are the filesystem rights ABI v handles.
func fsRights(v int) uint64 {
	r := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if v >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if v >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if v >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

const fileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// RestrictThread confines the calling OS thread to r, for good: the caller
// MUST have locked its goroutine to the thread and MUST never unlock it.
// It also sets no_new_privs on the thread.
func RestrictThread(r Rules) error {
	v, err := ABI()
	if err != nil {
		return err
	}
	handled := fsRights(v)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := unsafe.Offsetof(attr.Handled_access_net) // ABI 1-3 know only the fs rights
	if v >= 4 {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = unsafe.Offsetof(attr.Scoped)
	}
	if v >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = unsafe.Offsetof(attr.Quiet_access_fs)
	}
	r1, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock: create ruleset: %w", e)
	}
	fd := int(r1)
	defer unix.Close(fd)
	read := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	write := handled &^ (unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	dev := uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	for _, g := range []struct {
		paths  []string
		rights uint64
	}{{r.ReadExec, read}, {r.ReadWrite, write}, {r.Devices, dev}} {
		for _, p := range g.paths {
			if err := addPath(fd, p, g.rights&handled); err != nil {
				return err
			}
		}
	}
	if v >= 4 {
		for _, port := range r.ConnectTCP {
			rule := netPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if err := addRule(fd, landlockRuleNetPort, unsafe.Pointer(&rule)); err != nil {
				return fmt.Errorf("landlock: port %d: %w", port, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("landlock: no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock: restrict: %w", e)
	}
	return nil
}

// addPath grants rights below p; a path that does not exist is skipped
// (a system directory this host lacks), a file gets only file rights.
func addPath(fd int, p string, rights uint64) error {
	f, err := os.OpenFile(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock: %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("landlock: %s: %w", p, err)
	}
	if !st.IsDir() {
		rights &= fileOnly
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(f.Fd())}
	if err := addRule(fd, unix.LANDLOCK_RULE_PATH_BENEATH, unsafe.Pointer(&rule)); err != nil {
		return fmt.Errorf("landlock: rule for %s: %w", p, err)
	}
	return nil
}

// landlockRuleNetPort and netPortAttr are struct landlock_net_port_attr's
// rule type and layout (ABI 4), which x/sys/unix does not define.
const landlockRuleNetPort = 2

type netPortAttr struct {
	allowed uint64
	port    uint64
}

func addRule(fd, typ int, attr unsafe.Pointer) error {
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), uintptr(typ), uintptr(attr), 0, 0, 0); e != 0 {
		return e
	}
	return nil
}
