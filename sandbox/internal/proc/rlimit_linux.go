package proc

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// setRlimits lowers the stopped child's resource limits: no core files,
// and the CPU seconds, address space and open files of spec.
//
// A child that runs as another user (spec.Credential) is not ours to
// change unless we hold CAP_SYS_RESOURCE, which root does not always have
// (a container's root, some VMs, a systemd unit's bounding set). The
// kernel also lets a caller whose real uid and gid are the child's lower
// its limits, and those ids belong to each thread: so the limits are set
// from a thread of its own whose real ids are switched to the child's
// (effective and saved ids stay root's, and with them our capabilities).
// That thread ends with its goroutine and never runs anything else. It is
// made only when the limits cannot be set from here: a new thread for every
// run costs a thread's start and two wake-ups, milliseconds on a loaded
// host.
func setRlimits(pid int, spec Spec) error {
	err := prlimits(pid, spec)
	if spec.Credential == nil || !errors.Is(err, unix.EPERM) {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		c := spec.Credential
		keep := ^uintptr(0) // -1: leave this id as it is
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(c.Gid), keep, keep); e != 0 {
			errc <- fmt.Errorf("proc: act as gid %d to set limits: %w", c.Gid, e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(c.Uid), keep, keep); e != 0 {
			errc <- fmt.Errorf("proc: act as uid %d to set limits: %w", c.Uid, e)
			return
		}
		errc <- prlimits(pid, spec)
	}()
	return <-errc
}

func prlimits(pid int, spec Spec) error {
	l := spec.Limits
	set := func(res int, cur, max uint64) error {
		lim := unix.Rlimit{Cur: cur, Max: max}
		if err := unix.Prlimit(pid, res, &lim, nil); err != nil {
			return fmt.Errorf("proc: prlimit %d: %w", res, err)
		}
		return nil
	}
	if err := set(unix.RLIMIT_CORE, 0, 0); err != nil {
		return err
	}
	// CPU: SIGXCPU at the limit, SIGKILL a second later.
	if l.CPUSeconds > 0 {
		if err := set(unix.RLIMIT_CPU, uint64(l.CPUSeconds), uint64(l.CPUSeconds)+1); err != nil {
			return err
		}
	}
	if as := spec.AddressSpace; as > 0 {
		if err := set(unix.RLIMIT_AS, uint64(as), uint64(as)); err != nil {
			return err
		}
	}
	if l.OpenFiles > 0 {
		if err := set(unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)); err != nil {
			return err
		}
	}
	return nil
}
