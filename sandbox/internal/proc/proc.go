// Package proc starts one contained process for the process and bwrap
// tiers and sees it through to the end: rlimits and cgroup applied before
// the first instruction of the new program runs, its own session and
// process group, a scrubbed environment, output captured within a limit,
// wall-clock limit, and everything it started killed when it is done.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/capture"
	"github.com/writhq/writ/sandbox/internal/cgroup"
)

// Spec is one process to run.
type Spec struct {
	Tier string
	// Exe, when set, is the open executable to run (through /proc/self/fd),
	// so that what was inspected is what runs. Otherwise Path is run.
	Exe  *os.File
	Path string
	Args []string // argv, including argv[0]
	Env  []string // the whole environment; nil means empty
	Dir  string
	// Stdin is written to the process's standard input, then closed.
	Stdin []byte
	// ExtraFiles become fds 3, 4... (bwrap's --ro-bind-fd).
	ExtraFiles []*os.File

	Limits  sandbox.Limits
	Rlimits bool // apply CPU, AS, NOFILE rlimits (and core 0)
	// AddressSpace is RLIMIT_AS when Rlimits is set; 0 leaves it alone.
	AddressSpace int64
	Cgroup       *cgroup.Group // may be nil
	UnshareNet   bool          // start in a new, empty network namespace
	// CgroupWatchOnly uses Cgroup to kill and account only: the process is
	// not moved into it (the runc tier's runtime places the container).
	CgroupWatchOnly bool
	// OnKill, if set, is called whenever the tool is killed (timeout,
	// cancellation, output limit, end of run): the runc tier uses it to
	// kill a container whose processes are not ours.
	OnKill func()
	// SignalExit says that an exit code above 128 means the tool died of
	// signal code-128 (bwrap reports its child's death that way).
	SignalExit bool
	Grace      time.Duration // how long to wait for output after the end
}

// ErrLeakedFD means the new program would have started with a descriptor
// other than the ones it was given; it was killed before running.
var ErrLeakedFD = errors.New("proc: descriptor leaked into tool")

// Run runs spec to completion and reports it as an Outcome.
func Run(ctx context.Context, spec Spec) (sandbox.Outcome, error) {
	out := sandbox.Outcome{Tier: spec.Tier, ExitCode: -1}
	if spec.Grace == 0 {
		spec.Grace = 2 * time.Second
	}
	runCtx, cancel := context.WithTimeout(ctx, spec.Limits.Timeout())
	defer cancel()

	// kill ends the process group (pgid == pid, thanks to Setsid) and then
	// everything in the cgroup, which catches what left the group.
	kill := func(pid int) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if spec.Cgroup != nil {
			spec.Cgroup.Kill()
		}
		if spec.OnKill != nil {
			spec.OnKill()
		}
	}
	var limitHit bool // written by a reader goroutine, read after waitReaders
	onLimit := func() {
		limitHit = true
		cancel() // the tool is stopped through cmd.Cancel
	}
	stdout := capture.New(spec.Limits.OutputBytes, onLimit)
	stderr := capture.New(spec.Limits.OutputBytes, onLimit)

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
	readers := make(chan struct{}, 2)
	go drain(outR, stdout, readers)
	go drain(errR, stderr, readers)

	path := spec.Path
	if spec.Exe != nil {
		path = fmt.Sprintf("/proc/self/fd/%d", spec.Exe.Fd())
	}
	cmd := exec.CommandContext(runCtx, path)
	cmd.Args = spec.Args
	cmd.Env = append([]string{}, spec.Env...) // never nil: nil would inherit ours
	cmd.Dir = spec.Dir
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = spec.ExtraFiles
	cmd.WaitDelay = spec.Grace
	cmd.Cancel = func() error { kill(cmd.Process.Pid); return nil }
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:    true, // own session and process group: pgid == pid
		Pdeathsig: syscall.SIGKILL,
		// Stop at the exec so that limits are in place before the tool
		// runs a single instruction; see hold.go.
		Ptrace: true,
	}
	if spec.UnshareNet {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}

	markCloexec()
	start := time.Now()
	// The thread that forks is the tracer; hold must run on it.
	runtime.LockOSThread()
	err = cmd.Start()
	if err == nil {
		err = hold(cmd.Process.Pid, spec, 3+len(spec.ExtraFiles))
	}
	runtime.UnlockOSThread()
	outW.Close()
	errW.Close()
	// A stop that fails because the deadline or the caller already killed
	// the child is not an error of ours: the outcome says timeout/canceled.
	if err != nil && (cmd.Process == nil || runCtx.Err() == nil) {
		if cmd.Process != nil {
			kill(cmd.Process.Pid)
			_ = cmd.Wait()
		}
		waitReaders(readers, outR, errR, spec.Grace)
		return out, err
	}

	werr := cmd.Wait()
	out.Usage.Wall = time.Since(start)
	kill(cmd.Process.Pid) // grandchildren die with the tool, whatever their session
	waitReaders(readers, outR, errR, spec.Grace)
	fill(&out, cmd.ProcessState, werr)
	if spec.Cgroup != nil {
		// The group saw every process, not only the one we waited for.
		if cpu, ok := spec.Cgroup.CPU(); ok && cpu > out.Usage.UserCPU+out.Usage.SystemCPU {
			out.Usage.UserCPU, out.Usage.SystemCPU = cpu, 0
		}
		if peak, ok := spec.Cgroup.PeakMemory(); ok && peak > out.Usage.MaxRSS {
			out.Usage.MaxRSS = peak
		}
	}

	so, se := stdout.Result(), stderr.Result()
	out.Output, out.OutputHash, out.OutputBytes, out.Truncated = so.Kept, so.Hash, so.Total, so.Truncated
	out.Stderr, out.StderrBytes = se.Kept, se.Total
	out.Truncated = out.Truncated || se.Truncated

	switch {
	case limitHit:
		out.Status, out.Reason = sandbox.StatusOutputLimit, fmt.Sprintf("output above %d bytes", spec.Limits.OutputBytes)
	case ctx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusError, "canceled"
	case runCtx.Err() != nil:
		out.Status, out.Reason = sandbox.StatusTimeout, "wall"
	case cpuExceeded(cmd.ProcessState, out, spec):
		out.Status, out.Reason = sandbox.StatusTimeout, "cpu"
	case out.ExitCode == 0:
		out.Status = sandbox.StatusOK
	default:
		out.Status = sandbox.StatusError
	}
	return out, nil
}

func drain(r *os.File, w io.Writer, done chan<- struct{}) {
	_, _ = io.Copy(w, r)
	done <- struct{}{}
}

// waitReaders waits until both pipes reach end of file — every writer is
// dead — or grace passes, then closes the read ends so the copies stop.
func waitReaders(done <-chan struct{}, outR, errR *os.File, grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for n := 0; n < 2; n++ {
		select {
		case <-done:
		case <-t.C:
			outR.Close()
			errR.Close()
			<-done
		}
	}
	outR.Close()
	errR.Close()
}

func fill(out *sandbox.Outcome, ps *os.ProcessState, werr error) {
	if ps == nil {
		out.Reason = fmt.Sprint(werr)
		return
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			out.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			out.Reason = "signal: " + ws.Signal().String()
		}
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		out.Usage.UserCPU = time.Duration(ru.Utime.Nano())
		out.Usage.SystemCPU = time.Duration(ru.Stime.Nano())
		out.Usage.MaxRSS = ru.Maxrss * 1024
	}
}

// cpuExceeded tells a CPU-limit kill (SIGXCPU at the soft limit, SIGKILL at
// the hard one) from other deaths, by the CPU time the tool used.
func cpuExceeded(ps *os.ProcessState, out sandbox.Outcome, spec Spec) bool {
	if ps == nil || spec.Limits.CPUSeconds <= 0 {
		return false
	}
	var sig syscall.Signal
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig = ws.Signal()
	} else if spec.SignalExit && out.ExitCode > 128 {
		sig = syscall.Signal(out.ExitCode - 128)
	}
	if sig == syscall.SIGXCPU {
		return true
	}
	used := out.Usage.UserCPU + out.Usage.SystemCPU
	return sig == syscall.SIGKILL && used >= time.Duration(spec.Limits.CPUSeconds)*time.Second
}
