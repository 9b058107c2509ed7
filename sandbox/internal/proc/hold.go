//go:build linux

package proc

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Why ptrace: os/exec cannot set resource limits for the child alone, and
// setting them after Start races with the tool, which may already have
// forked or allocated. Re-executing our own binary as a trampoline would
// work, but only in binaries that call its hook early, and it pays for a Go
// runtime start on every invocation. Instead the child asks to be traced
// (SysProcAttr.Ptrace, PTRACE_TRACEME) so the kernel stops it with SIGTRAP
// right after execve, before the new program runs anything. While it is
// stopped we set its rlimits with prlimit(2), move it into its cgroup,
// check that it holds no descriptor but the ones we gave it, and detach.
//
// hold does that; it must run on the OS thread that started the child,
// which is the tracer.
func hold(pid int, spec Spec, wantFDs int) error {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("proc: wait for exec stop: %w", err)
		}
		break
	}
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		return fmt.Errorf("proc: child did not stop at exec (status %v)", ws)
	}
	var err error
	if spec.Landlock == nil && spec.Seccomp == nil && !spec.PidNS {
		err = prepare(pid, spec, wantFDs)
	} else {
		// prepare writes cgroup files and reads the child's /proc/PID: it
		// runs on another thread, since this one is confined by Landlock
		// and seccomp already, or sees the /proc of the tool's pid
		// namespace, where the child has another pid.
		errc := make(chan error, 1)
		go func() { errc <- prepare(pid, spec, wantFDs) }()
		err = <-errc
	}
	if derr := syscall.PtraceDetach(pid); derr != nil && err == nil {
		err = fmt.Errorf("proc: detach: %w", derr)
	}
	return err
}

func prepare(pid int, spec Spec, wantFDs int) error {
	if spec.Cgroup != nil && !spec.CgroupWatchOnly && !spec.cloneInto && spec.Join == nil {
		if err := spec.Cgroup.Add(pid); err != nil {
			return err
		}
	}
	if spec.Rlimits {
		if err := setRlimits(pid, spec); err != nil {
			return err
		}
	}
	return checkFDs(pid, wantFDs)
}

// checkFDs fails if the stopped child holds a descriptor numbered wantFDs
// or above.
func checkFDs(pid, wantFDs int) error {
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return fmt.Errorf("proc: list descriptors: %w", err)
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= wantFDs {
			target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + e.Name())
			return fmt.Errorf("%w: fd %d (%s)", ErrLeakedFD, n, target)
		}
	}
	return nil
}

// markCloexec makes every descriptor of ours above stderr close-on-exec.
// Go opens its own that way, but a descriptor inherited from whoever started
// the agent (or opened by C code) would otherwise reach the tool.
func markCloexec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 2 {
			unix.CloseOnExec(n)
		}
	}
}
