//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/capture"
)

// Run runs spec to completion and reports it as an Outcome.
func Run(ctx context.Context, spec Spec) (sandbox.Outcome, error) {
	out := sandbox.Outcome{Tier: spec.Tier, ExitCode: -1}
	if spec.DirMount != nil && !spec.PidNS {
		// The mount is shown only inside the tool's own namespaces: without
		// them the tool would work on the host's directory, unbounded.
		return out, errors.New("proc: a workspace mount needs the tool's own pid and mount namespaces")
	}
	// kill ends the process group (pgid == pid, thanks to Setsid) while
	// the leader is unreaped (see group), then everything in the cgroup,
	// which catches what left the group.
	var grp group
	if spec.Grace == 0 {
		spec.Grace = 2 * time.Second
	}
	// The limits kill at once (runCtx); the caller's cancel stops the tool
	// gently: SIGTERM to its group and its cgroup, then, Grace later, the
	// kill (runCtx's cancel).
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spec.Limits.Timeout())
	defer cancel()
	var (
		pid     atomic.Int64 // once started
		termMu  sync.Mutex
		termEnd *time.Timer
	)
	stopTerm := context.AfterFunc(ctx, func() {
		termMu.Lock()
		defer termMu.Unlock()
		p := int(pid.Load())
		if p == 0 {
			cancel() // not started, or starting: no time to give
			return
		}
		// A supervisor (bwrap) would die of SIGTERM and take the tool
		// down with SIGKILL at once: the tool below it is sent SIGTERM
		// through the cgroup. Without one, or with no other member, the
		// leader's group is all there is to signal.
		signaled := spec.Cgroup != nil && spec.Cgroup.Terminate(p)
		if !spec.Supervisor || !signaled {
			grp.signal(p, syscall.SIGTERM)
		}
		termEnd = time.AfterFunc(spec.Grace, cancel)
	})
	defer func() {
		stopTerm()
		termMu.Lock()
		if termEnd != nil {
			termEnd.Stop()
		}
		termMu.Unlock()
	}()

	kill := func(pid int) {
		grp.kill(pid)
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
	// Stdin is a pipe of ours too (not one exec.Cmd makes in Start), so
	// that every descriptor the child is given is open before the
	// executable's descriptor is chosen (execFD).
	inR, inW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return out, err
	}
	defer inR.Close()
	defer inW.Close() // unblocks the writer when the tool never read
	readers := make(chan struct{}, 2)
	var talk *tee
	var talkOut *io.PipeReader
	if spec.Talk == nil {
		go func() {
			_, _ = inW.Write(spec.Stdin) // EPIPE when the tool exits without reading
			inW.Close()
		}()
		go drain(outR, stdout, readers)
	} else {
		var pw *io.PipeWriter
		talkOut, pw = io.Pipe()
		talk = &tee{capture: stdout, pw: pw}
		go func() {
			_, _ = io.Copy(talk, outR)
			talk.end()
			readers <- struct{}{}
		}()
	}
	go drain(errR, stderr, readers)

	path := spec.Path
	if spec.Exe != nil {
		fd, err := execFD(spec.Exe, append([]*os.File{inR, outW, errW}, spec.ExtraFiles...))
		if err != nil {
			outW.Close()
			errW.Close()
			waitReaders(readers, outR, errR, spec.Grace)
			return out, err
		}
		defer syscall.Close(fd)
		path = fmt.Sprintf("/proc/self/fd/%d", fd)
	}
	cmd := exec.CommandContext(runCtx, path)
	cmd.Args = spec.Args
	cmd.Env = append([]string{}, spec.Env...) // never nil: nil would inherit ours
	cmd.Dir = spec.Dir
	cmd.Stdin = inR
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = spec.ExtraFiles
	cmd.WaitDelay = spec.Grace
	cmd.Cancel = func() error { kill(cmd.Process.Pid); return nil }
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own session and process group (pgid == pid), or only the group.
		Setsid:    !spec.KeepSession,
		Setpgid:   spec.KeepSession,
		Pdeathsig: syscall.SIGKILL,
		// Stop at the exec so that limits are in place before the tool
		// runs a single instruction; see hold.go.
		Ptrace: true,
	}
	// A seccomp filter on the starting thread answers clone3, which
	// CLONE_INTO_CGROUP needs, with ENOSYS: then the process is moved into
	// its group at its exec stop.
	if spec.Cgroup != nil && !spec.CgroupWatchOnly && spec.Cgroup.FD() >= 0 && !cloneIntoBroken.Load() && spec.Seccomp == nil {
		// v2: the child is born in its group; nothing to move at the stop.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, spec.Cgroup.FD()
		spec.cloneInto = true
	}
	if spec.Credential != nil {
		cmd.SysProcAttr.Credential = spec.Credential
	}
	if spec.PidNS {
		// Born in another pid namespace, the child sees parent pid 0,
		// which Go's child takes for a dead parent; the namespace's init
		// dies with the agent instead (pidNamespace).
		cmd.SysProcAttr.Pdeathsig = 0
	}

	markCloexec()
	beforeStart()
	start := time.Now()
	started, waited := make(chan error, 1), make(chan error, 1)
	go startAndWait(cmd, spec, &grp, started, waited)
	err = <-started
	if cmd.Process != nil {
		pid.Store(int64(cmd.Process.Pid))
	}
	if err == nil && spec.Join != nil {
		add := func(int) error { return nil }
		if spec.Cgroup != nil && !spec.CgroupWatchOnly && !spec.cloneInto {
			add = spec.Cgroup.Add
		}
		err = spec.Join(cmd.Process.Pid, add)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	// A stop that fails because the deadline or the caller already killed
	// the child is not an error of ours: the outcome says timeout/canceled.
	if err != nil && cmd.Process == nil && spec.cloneInto && cloneIntoUnsupported(err) {
		cloneIntoBroken.Store(true)
		err = fmt.Errorf("%w: %v", errCloneIntoCgroup, err)
	}
	if err != nil && (cmd.Process == nil || runCtx.Err() == nil) {
		if cmd.Process != nil {
			kill(cmd.Process.Pid)
			<-waited
		}
		waitReaders(readers, outR, errR, spec.Grace)
		return out, err
	}

	exited := make(chan struct{})
	if talk != nil {
		talked := make(chan struct{})
		defer func() { <-talked }()
		go func() {
			defer close(talked)
			spec.Talk(runCtx, inW, talkOut)
			talkOut.Close()
			inW.Close() // the end of the conversation: the tool may exit
			t := time.NewTimer(spec.Grace)
			defer t.Stop()
			select {
			case <-t.C:
				kill(cmd.Process.Pid)
			case <-exited:
			}
		}()
	}
	werr := <-waited
	close(exited)
	out.Usage.Wall = time.Since(start)
	afterReap(cmd.Process.Pid)
	// The group was killed before the leader was reaped (startAndWait);
	// now the cgroup catches what left it, whatever its session.
	kill(cmd.Process.Pid)
	waitReaders(readers, outR, errR, spec.Grace)
	fill(&out, cmd.ProcessState, werr)
	oom := false
	if spec.Cgroup != nil {
		n, ok := spec.Cgroup.OOMKills()
		oom = ok && n > 0
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
	case oom && out.ExitCode != 0:
		out.Status, out.Reason = sandbox.StatusError, "memory"
	case out.ExitCode == 0:
		out.Status = sandbox.StatusOK
	default:
		out.Status = sandbox.StatusError
	}
	return out, nil
}

// beforeStart is called just before the child is started; a test sets it to
// close descriptors as a concurrent run would.
var beforeStart = func() {}

// afterReap is called once the tool's process has been reaped; a test sets
// it to start a process that takes the freed pid.
var afterReap = func(pid int) {}

// group signals the tool's process group, whose id is the tool's pid. Once
// the tool is reaped and no member is left, the kernel may give that pid to
// a new process, which may lead a process group of its own — another tool,
// any process on the host — and kill(-pid) would then reach it. So the
// group is signalled only while the tool is unreaped: its last kill comes
// when the tool has exited and not yet been reaped (startAndWait), and
// after that kill does nothing (the cgroup, ours alone, still catches what
// is left). A cancellation os/exec delivers after the reap (its context
// watcher can run then) is harmless for the same reason.
type group struct {
	mu     sync.Mutex
	reaped bool
}

// kill sends SIGKILL to the group led by pid unless pid was reaped.
func (g *group) kill(pid int) { g.signal(pid, syscall.SIGKILL) }

// signal sends sig to the group led by pid unless pid was reaped.
func (g *group) signal(pid int, sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		_ = syscall.Kill(-pid, sig)
	}
}

// last kills the group of pid, which has exited but is not reaped yet —
// grandchildren die with the tool — and stops every later kill.
func (g *group) last(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	g.reaped = true
}

// execFD duplicates the executable's descriptor (close-on-exec) to a number
// the child cannot lose before it execs /proc/self/fd/N. Between fork and
// exec, Go's child moves descriptors around: it writes fds 0 to len(files)-1
// and the numbers just above the highest descriptor it is given (its error
// pipe, and the copies of the files it must move out of the way) —
// whatever else was open there, in the child, is replaced. An executable
// opened before the pipes usually has a lower number than them; but with
// tools starting concurrently, descriptors are freed and reused, and the
// executable's was sometimes the one just above, so the child exec'd its own
// error pipe: EACCES, "fork/exec /proc/self/fd/N: permission denied". Above
// max(files) + len(files) + 2 nothing is written.
func execFD(exe *os.File, files []*os.File) (int, error) {
	high := len(files)
	for _, f := range files {
		high = max(high, int(f.Fd()))
	}
	fd, err := unix.FcntlInt(exe.Fd(), unix.F_DUPFD_CLOEXEC, high+len(files)+3)
	if err != nil {
		return -1, fmt.Errorf("proc: duplicate the executable's descriptor: %w", err)
	}
	return fd, nil
}

// cloneIntoBroken is set once the kernel refused CLONE_INTO_CGROUP: from
// then on processes are moved into their group at their exec stop.
var cloneIntoBroken atomic.Bool

// cloneIntoUnsupported recognises what clone3 says on kernels before 5.7:
// no clone3 at all (ENOSYS), or arguments larger than it knows (E2BIG) or
// a flag it does not know (EINVAL).
func cloneIntoUnsupported(err error) bool {
	return errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.E2BIG) || errors.Is(err, syscall.EINVAL)
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
