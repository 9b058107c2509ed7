package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/capture"
)

// Run runs spec on macOS: through spec.Wrapper (sandbox-exec and its
// profile), in its own process group killed as a whole, with a scrubbed
// environment, output captured within the limit and the wall-clock limit.
// macOS has no way to set a child's rlimits before it runs short of a
// trampoline, no cgroups and no PTRACE_TRACEME stop: CPU time is bounded
// by the wall clock only there (docs/sandboxes.md).
func Run(ctx context.Context, spec Spec) (sandbox.Outcome, error) {
	out := sandbox.Outcome{Tier: spec.Tier, ExitCode: -1}
	if spec.Talk != nil {
		return out, errors.New("proc: a conversation with the tool (Spec.Talk) is Linux only")
	}
	if spec.Grace == 0 {
		spec.Grace = 2 * time.Second
	}
	runCtx, cancel := context.WithTimeout(ctx, spec.Limits.Timeout())
	defer cancel()
	var limitHit bool
	onLimit := func() { limitHit = true; cancel() }
	stdout := capture.New(spec.Limits.OutputBytes, onLimit)
	stderr := capture.New(spec.Limits.OutputBytes, onLimit)

	path, args := spec.Path, spec.Args
	if len(spec.Wrapper) > 0 {
		path = spec.Wrapper[0]
		args = append(append(append([]string{}, spec.Wrapper...), spec.Path), spec.Args[1:]...)
	}
	cmd := exec.CommandContext(runCtx, path)
	cmd.Args = args
	cmd.Env = append([]string{}, spec.Env...)
	cmd.Dir = spec.Dir
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	outR, outW, err := os.Pipe()
	if err != nil {
		return out, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return out, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.WaitDelay = spec.Grace
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The group (pgid == pid) is signalled only while the tool is unreaped:
	// once reaped, its pid may lead a stranger's group (see the Linux Run).
	var grp struct {
		sync.Mutex
		reaped bool
	}
	// killGroup signals the group unless the tool is (about to be) reaped;
	// with kill false it only records that from now on nothing is sent.
	killGroup := func(kill, last bool) {
		grp.Lock()
		defer grp.Unlock()
		if kill && !grp.reaped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		grp.reaped = grp.reaped || last
	}
	cmd.Cancel = func() error { killGroup(true, false); return nil }
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(stdout, outR); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stderr, errR); done <- struct{}{} }()
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return out, err
	}
	// Grandchildren die with the tool: the group's last kill comes once the
	// tool has exited and before Wait reaps it. Where its exit cannot be
	// watched, the group is not signalled after the end at all.
	killGroup(awaitExit(cmd.Process.Pid), true)
	werr := cmd.Wait()
	out.Usage.Wall = time.Since(start)
	for i := 0; i < 2; i++ {
		select {
		case <-done:
		case <-time.After(spec.Grace):
			outR.Close()
			errR.Close()
			<-done
		}
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Exited() {
			out.ExitCode = ws.ExitStatus()
		} else if ws.Signaled() {
			out.Reason = "signal: " + ws.Signal().String()
		}
	} else if werr != nil {
		out.Reason = werr.Error()
	}
	so, se := stdout.Result(), stderr.Result()
	out.Output, out.OutputHash, out.OutputBytes, out.Truncated = so.Kept, so.Hash, so.Total, so.Truncated || se.Truncated
	out.Stderr, out.StderrBytes = se.Kept, se.Total
	switch {
	case limitHit:
		out.Status, out.Reason = sandbox.StatusOutputLimit, fmt.Sprintf("output above %d bytes", spec.Limits.OutputBytes)
	case ctx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusError, "canceled"
	case runCtx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusTimeout, "wall"
	case out.ExitCode == 0:
		out.Status = sandbox.StatusOK
	default:
		out.Status = sandbox.StatusError
	}
	return out, nil
}

// awaitExit blocks until the child pid has exited, without reaping it
// (kqueue EVFILT_PROC NOTE_EXIT), and reports whether it could watch.
func awaitExit(pid int) bool {
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	changes := []unix.Kevent_t{ev}
	for {
		n, err := unix.Kevent(kq, changes, events, nil)
		if err == unix.EINTR {
			changes = nil // registered already
			continue
		}
		if err == unix.ESRCH {
			return true // exited before it could be watched; still unreaped
		}
		if err != nil {
			return false
		}
		if n == 1 && events[0].Flags&unix.EV_ERROR != 0 {
			return events[0].Data == int64(unix.ESRCH)
		}
		if n == 1 && events[0].Fflags&unix.NOTE_EXIT != 0 {
			return true
		}
		changes = nil
	}
}
