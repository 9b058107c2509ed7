package proc

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// initArgs is everything the init's child side uses, prepared before the
// fork: between fork and exec it may make raw system calls only.
type initArgs struct {
	source, target, fstype *byte
	flags                  uintptr
	pdeathsig              uintptr // 0: none
	path                   *byte
	argv, envv             *[2]*byte
	stdin, null, errw      int
}

// startInit forks the init and returns its pid and the write end of its
// stdin, whose closing ends it. With pdeathsig the init is also killed when
// the calling thread ends.
func startInit(cat string, pdeathsig bool) (int, *os.File, error) {
	a := initArgs{flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, envv: &[2]*byte{}}
	if pdeathsig {
		a.pdeathsig = uintptr(syscall.SIGKILL)
	}
	var err error
	strs := []struct {
		dst **byte
		s   string
	}{{&a.source, "proc"}, {&a.target, "/proc"}, {&a.fstype, "proc"}, {&a.path, cat}}
	for _, s := range strs {
		if *s.dst, err = unix.BytePtrFromString(s.s); err != nil {
			return 0, nil, err
		}
	}
	argv0, _ := unix.BytePtrFromString("cat")
	a.argv = &[2]*byte{argv0}

	// Every descriptor the child moves is above 2, so that none is
	// overwritten by another before it is moved (an agent without a stdin
	// would get 0 for a new pipe), and close-on-exec.
	var fds [3][2]int
	defer func() {
		for _, p := range fds {
			for _, fd := range p {
				if fd > 0 {
					unix.Close(fd)
				}
			}
		}
	}()
	in, errp := &fds[0], &fds[1]
	if err := pipeAbove2(in); err != nil {
		return 0, nil, err
	}
	if err := pipeAbove2(errp); err != nil {
		return 0, nil, err
	}
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("proc: /dev/null: %w", err)
	}
	fds[2][0] = null
	if fds[2][0], err = above2(null); err != nil {
		return 0, nil, err
	}
	a.stdin, a.null, a.errw = in[0], fds[2][0], errp[1]

	pid, errno := forkInit(&a)
	if errno != 0 {
		return 0, nil, fmt.Errorf("proc: fork the pid namespace's init: %w", errno)
	}
	unix.Close(errp[1])
	errp[1] = -1
	var buf [4]byte
	n, _ := unix.Read(errp[0], buf[:])
	if n > 0 {
		var ws unix.WaitStatus
		_, _ = unix.Wait4(int(pid), &ws, 0, nil)
		e := syscall.Errno(*(*uint32)(unsafe.Pointer(&buf[0])))
		return 0, nil, fmt.Errorf("proc: start the pid namespace's init (mount its /proc, exec %s): %w", cat, e)
	}
	w := os.NewFile(uintptr(in[1]), "init-stdin")
	in[1] = -1
	return int(pid), w, nil
}

// forkInit forks the init from the calling thread, with every signal
// blocked until the child has exec'd (a Go signal handler must not run in
// it) and syscall.ForkLock held, as os/exec does. CLONE_VFORK without
// CLONE_VM: the child works on a copy of our memory, and this thread waits
// until it has exec'd or exited.
func forkInit(a *initArgs) (uintptr, syscall.Errno) {
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return 0, err.(syscall.Errno)
	}
	pid, errno := forkInitRaw(a)
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return pid, errno
}

// forkInitRaw is both sides of the fork. The child's side runs without
// the Go runtime: raw system calls only, no allocation, no stack growth
// (nosplit), no race instrumentation.
//
//go:norace
//go:nosplit
func forkInitRaw(a *initArgs) (uintptr, syscall.Errno) {
	pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD)|unix.CLONE_VFORK, 0, 0, 0, 0, 0)
	if e != 0 || pid != 0 {
		return pid, e
	}
	// The child: pid 1 of the new namespace.
	if a.pdeathsig != 0 {
		if _, _, e = syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, a.pdeathsig, 0, 0, 0, 0); e != 0 {
			initFail(a.errw, e)
		}
	}
	if _, _, e = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(a.source)), uintptr(unsafe.Pointer(a.target)),
		uintptr(unsafe.Pointer(a.fstype)), a.flags, 0, 0); e != 0 {
		initFail(a.errw, e)
	}
	if _, _, e = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(a.stdin), 0, 0); e != 0 {
		initFail(a.errw, e)
	}
	if _, _, e = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(a.null), 1, 0); e != 0 {
		initFail(a.errw, e)
	}
	if _, _, e = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(a.null), 2, 0); e != 0 {
		initFail(a.errw, e)
	}
	_, _, e = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(a.path)),
		uintptr(unsafe.Pointer(&a.argv[0])), uintptr(unsafe.Pointer(&a.envv[0])))
	initFail(a.errw, e)
	return 0, 0
}

// initFail reports errno on the error pipe and ends the child.
//
//go:norace
//go:nosplit
func initFail(fd int, e syscall.Errno) {
	v := uint32(e)
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&v)), 4)
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
	}
}

// pipeAbove2 makes a close-on-exec pipe whose two ends are above 2.
func pipeAbove2(p *[2]int) error {
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("proc: pipe: %w", err)
	}
	for i := range p {
		fd, err := above2(p[i])
		p[i] = fd
		if err != nil {
			return err
		}
	}
	return nil
}

// above2 returns fd itself when it is above 2, else a close-on-exec
// duplicate above 2 (closing fd).
func above2(fd int) (int, error) {
	if fd > 2 {
		return fd, nil
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	unix.Close(fd)
	if err != nil {
		return -1, fmt.Errorf("proc: dup: %w", err)
	}
	return nfd, nil
}
