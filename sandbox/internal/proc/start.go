//go:build linux

package proc

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox/internal/landlock"
	"github.com/writhq/writ/sandbox/internal/seccomp"
)

// startAndWait starts cmd from one locked OS thread, holds it at its exec
// (see hold.go), reports the start on started, then waits for it and
// reports on waited (only when it started). Between the tool's exit and its
// reap it kills the tool's process group for the last time (group.last).
//
// Everything happens on that one thread for three reasons: it is the
// ptrace tracer; Pdeathsig fires when the thread that forked exits, so it
// must outlive the child; and namespaces and Landlock domains are per
// thread, so joining the tool's network namespace or confining the thread
// before the fork is how the child gets them. A thread changed that way is
// never handed back to the Go scheduler: it exits with this goroutine.
func startAndWait(cmd *exec.Cmd, spec Spec, grp *group, started, waited chan<- error) {
	warmPidfd()
	runtime.LockOSThread()
	tainted := spec.NetNS != nil || spec.Landlock != nil || len(spec.Binds) > 0 || len(spec.Unmount) > 0 ||
		spec.PidNS || spec.Seccomp != nil || spec.UnshareNet
	if !tainted {
		defer runtime.UnlockOSThread()
	}
	stop, err := enter(spec)
	if err != nil {
		started <- err
		return
	}
	defer stop()
	if spec.PidNS {
		cmd.Dir = "" // the thread's, set by enter
	}
	err = cmd.Start()
	if err == nil {
		err = hold(cmd.Process.Pid, spec, 3+len(spec.ExtraFiles))
	}
	started <- err
	if cmd.Process != nil {
		reapTraced(cmd.Process.Pid) // returns once the tool exited, unreaped
		grp.last(cmd.Process.Pid)
		waited <- cmd.Wait()
	}
}

// enter moves the calling thread into the tool's network namespace (or a
// new one), into a private mount namespace with spec.Binds and without
// spec.Unmount, makes its children start in a new pid namespace, confines
// it with Landlock and installs the seccomp filter, as spec asks. The filter comes last: it
// refuses the calls that come before it.
func enter(spec Spec) (stop func(), err error) {
	stop = func() {}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if spec.NetNS != nil {
		if err := unix.Setns(int(spec.NetNS.Fd()), unix.CLONE_NEWNET); err != nil {
			return stop, fmt.Errorf("proc: join the tool's network namespace: %w", err)
		}
	} else if spec.UnshareNet {
		if err := enterEmptyNetns(); err != nil {
			return stop, fmt.Errorf("proc: new network namespace: %w", err)
		}
	}
	if len(spec.Binds) > 0 || len(spec.Unmount) > 0 {
		// Detached copies first: a mount of the namespace left behind
		// cannot be bound in the new one.
		trees := make([]int, len(spec.Binds))
		for i, b := range spec.Binds {
			if b.Detached {
				trees[i] = int(b.Source.Fd())
				continue
			}
			fd, err := unix.OpenTree(int(b.Source.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
			if err != nil {
				return stop, fmt.Errorf("proc: copy the mount of %s: %w", b.Target, err)
			}
			defer unix.Close(fd)
			trees[i] = fd
		}
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return stop, fmt.Errorf("proc: private mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return stop, fmt.Errorf("proc: private mount namespace: %w", err)
		}
		for i, b := range spec.Binds {
			if err := unix.MoveMount(trees[i], "", unix.AT_FDCWD, b.Target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return stop, fmt.Errorf("proc: bind on %s: %w", b.Target, err)
			}
		}
		for _, p := range spec.Unmount {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				return stop, fmt.Errorf("proc: unmount %s: %w", p, err)
			}
		}
	}
	if spec.PidNS {
		// A directory opened before the new mount namespace is on a mount
		// of the old one: a child started there could not even name its
		// working directory (getcwd fails). The thread moves to the same
		// directory as the new namespace shows it, and the child inherits
		// that. Where it is is read first: the new /proc does not show
		// this thread.
		var wd workDir
		if spec.Dir != "" {
			if wd, err = findWorkDir(spec.Dir, spec.DirMount); err != nil {
				return stop, err
			}
		}
		ok := false
		if len(spec.Binds) == 0 && len(spec.Unmount) == 0 {
			if stop, ok, err = enterReadyPidNS(spec.Dir, wd, spec.DirMount); err != nil {
				return func() {}, err
			}
		}
		if !ok {
			if stop, err = pidNamespace(); err != nil {
				return func() {}, err
			}
			if spec.DirMount != nil {
				if err := placeMount(int(spec.DirMount.Fd()), wd.path); err != nil {
					return stop, err
				}
			}
		}
		if spec.Dir != "" {
			if err := wd.chdir(); err != nil {
				return stop, err
			}
		}
	}
	if spec.Landlock != nil {
		if err := landlock.RestrictThread(*spec.Landlock); err != nil {
			return stop, fmt.Errorf("proc: %w", err)
		}
	}
	if spec.Seccomp != nil {
		if err := seccomp.InstallThread(spec.Seccomp); err != nil {
			return stop, fmt.Errorf("proc: %w", err)
		}
	}
	return stop, nil
}
