package proc

import (
	"syscall"
	"unsafe"
)

// Why: the agent's thread that started the tool is its parent, and a tool
// may make any of its threads traced by its parent (PTRACE_TRACEME; only
// bwrap's and runc's seccomp filters refuse it, Landlock allows it since
// that thread is in the tool's own domain). Such a thread stops at every
// signal until its tracer acts, and when it dies it stays a zombie until
// its tracer reaps it by its thread id — and until then the process, and
// so os/exec's Wait, never ends: not even SIGKILL of everything would free
// the run. So the tracer thread watches its own children in the tool's
// process group, and lets any such thread go at its stop (with its signal)
// or reaps it once dead, until the tool's process itself has ended.
const (
	wNoThread = 0x20000000 // __WNOTHREAD: only this thread's children and tracees
	wAll      = 0x40000000 // __WALL: threads and clone children too
	pPGID     = 2          // P_PGID

	cldExited  = 1
	cldKilled  = 2
	cldDumped  = 3
	cldTrapped = 4
	cldStopped = 5
)

// siginfo is a siginfo_t; for SIGCHLD si_pid, si_uid and si_status follow
// the three ints of its head, at the union's alignment (a word).
type siginfo [128]byte

func (s *siginfo) field(i int) int32 {
	off := (3*4+int(unsafe.Sizeof(uintptr(0)))-1)/int(unsafe.Sizeof(uintptr(0)))*int(unsafe.Sizeof(uintptr(0))) + 4*i
	return *(*int32)(unsafe.Pointer(&s[off]))
}

func (s *siginfo) code() int32 { return *(*int32)(unsafe.Pointer(&s[8])) }

// reapTraced returns once the tool's process (pid, leader of its own
// process group) has exited, without reaping it: os/exec's Wait does.
// It must run on the thread that started the tool.
func reapTraced(pid int) {
	for {
		var info siginfo
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPGID, uintptr(pid), uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|0x01000000 /* WNOWAIT */ |wAll|wNoThread, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return // nothing of ours left to wait for; Wait reports it
		}
		who, status := int(info.field(0)), int(info.field(2))
		switch code := info.code(); {
		case code == cldTrapped || code == cldStopped:
			// A traced thread (or the leader) stopped: let it go, giving
			// it the signal it stopped with — but not the SIGTRAP that
			// only a traced exec gets.
			sig := status & 0x7f
			if sig == int(syscall.SIGTRAP) {
				sig = 0
			}
			if _, _, e := syscall.RawSyscall6(syscall.SYS_PTRACE, syscall.PTRACE_DETACH, uintptr(who), 0,
				uintptr(sig), 0, 0); e != 0 && e != syscall.ESRCH {
				// Fail closed: a stop we cannot end ends the tool.
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		case who == pid && (code == cldExited || code == cldKilled || code == cldDumped):
			return
		default:
			// A traced thread of the tool that died: reap it by its id.
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(who, &ws, wAll|wNoThread, nil)
		}
	}
}
