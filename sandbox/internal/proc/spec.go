// Package proc starts one process for the process, bwrap and runc tiers
// (gvisor runs through runc) and sees it through to the end. For the
// process tier that process is the tool, confined as its Spec asks before
// the first instruction of the new program runs: rlimits, cgroup, Landlock,
// seccomp, network, pid and mount namespaces, another user. For bwrap and
// runc it is the runtime binary, which confines the tool itself (runc's
// container is placed in its cgroup by the runtime, and killed through it
// with OnKill). In every case: a process group of its own (and a session,
// unless KeepSession), the environment given and nothing else, output
// captured within a limit, a wall-clock limit, and everything it started
// killed when it is done.
package proc

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/cgroup"
	"github.com/writhq/writ/sandbox/internal/landlock"
)

// Spec is one process to run.
type Spec struct {
	Tier string
	// Exe, when set, is the open executable to run (through /proc/self/fd),
	// so that what was inspected is what runs. Otherwise Path is run.
	Exe  *os.File
	Path string
	Args []string // argv, including argv[0]
	// Wrapper, when set, is run instead, with Path and Args[1:] appended
	// (macOS: sandbox-exec -p PROFILE --).
	Wrapper []string
	Env     []string // the whole environment; nil means empty
	Dir     string
	// Stdin is written to the process's standard input, then closed.
	Stdin []byte
	// Talk, when set, replaces Stdin: it holds a conversation with the
	// process over its standard input and output (see sandbox.Talk); once
	// it returns, stdin is closed and a process still running after Grace
	// is killed. Linux only.
	Talk sandbox.Talk
	// ExtraFiles become fds 3, 4... (bwrap's --ro-bind-fd).
	ExtraFiles []*os.File

	Limits  sandbox.Limits
	Rlimits bool // apply CPU, AS, NOFILE rlimits (and core 0)
	// AddressSpace is RLIMIT_AS when Rlimits is set; 0 leaves it alone.
	AddressSpace int64
	Cgroup       *cgroup.Group // may be nil
	UnshareNet   bool          // start in a new, empty network namespace
	// NetNS, when set, is the network namespace the process starts in
	// (the egress proxy's); it overrides UnshareNet.
	NetNS *os.File
	// Landlock, when set, confines the process to these paths (process
	// tier); a kernel without Landlock makes the start fail.
	Landlock *landlock.Rules
	// Credential, when set, is the uid and gid the process runs as.
	Credential *syscall.Credential
	// Seccomp, when set, is an encoded seccomp program (see
	// sandbox/internal/seccomp, ProgramTraced) installed on the thread that
	// starts the process, which inherits it with no_new_privs.
	Seccomp []byte
	// PidNS starts the process as pid 1 of a new pid namespace, in a mount
	// namespace of its own (slave of the host's) where a fresh /proc of that
	// pid namespace replaces the host's before the process runs: it sees
	// its own processes only. The agent must be root.
	PidNS bool
	// DirMount, with PidNS, is a detached mount (fsmount: the workspace's
	// private tmpfs) placed on Dir's path in the process's mount namespace
	// before it starts: it works there, and the host's mounts never change.
	DirMount *os.File
	// Binds, when set, are bind mounts made in a private mount namespace
	// (its mounts slaves of the host's, nothing propagating back) that the
	// process starts in; the agent must be root. The bwrap tier uses it to
	// show a workspace, which the run-as user cannot reach through the
	// agent's private directories, at a path that user can walk.
	Binds []Bind
	// Unmount, when set, are mount points detached (MNT_DETACH) in a
	// private mount namespace (its mounts slaves of the host's, nothing
	// propagating back) that the process starts in, after Binds; the agent
	// must be root. The runc tier hides a hybrid host's cgroup2 mount from
	// crun this way (docs/sandboxes.md).
	Unmount []string
	// Join, when set, places the process in Cgroup after its exec stop
	// instead of at it, while it runs: on cgroup v1 the first move into a
	// group waits for an RCU grace period (milliseconds on a loaded host),
	// which the process can then spend on its own start. Join is called
	// once the process was let go, with its pid and add, which places one
	// process in the group (a no-op when the process was born in it or
	// there is none). It MUST place the process and everything it started
	// before any of them runs the tool, and only then let the tool run;
	// an error ends the run (the process group is killed first). The
	// bwrap tier holds its sandbox with --block-fd until both bwrap and
	// the sandbox's first process (--info-fd) are placed.
	Join func(pid int, add func(pid int) error) error
	// CgroupWatchOnly uses Cgroup to kill and account only: the process is
	// not moved into it (the runc tier's runtime places the container).
	CgroupWatchOnly bool
	// OnKill, if set, is called whenever the tool is killed (timeout,
	// cancellation, output limit, end of run): the runc tier uses it to
	// kill a container whose processes are not ours.
	OnKill func()
	// KeepSession gives the process a process group of its own (killed as
	// a whole all the same) but leaves it in the agent's session. For bwrap,
	// which makes the tool's session itself (--new-session): a session of
	// its own would cost the outer bwrap a new scheduler autogroup on every
	// run, measurably slower on a loaded host (docs/sandboxes.md).
	KeepSession bool
	// SignalExit says that an exit code above 128 means the tool died of
	// signal code-128 (bwrap reports its child's death that way).
	SignalExit bool
	// Supervisor says the process started is a supervisor of the tool
	// (bwrap) that must not be sent the SIGTERM of a graceful stop (it
	// would die of it and take the tool with it at once): the other
	// processes of Cgroup are sent it instead.
	Supervisor bool
	Grace      time.Duration // how long to wait for output after the end, and from SIGTERM to SIGKILL when the caller cancels

	cloneInto bool // the process is cloned into Cgroup (v2), not moved
}

// Bind mounts the open directory Source on Target.
type Bind struct {
	Source *os.File
	Target string
	// Detached says Source is a detached mount (fsmount: a workspace's
	// private tmpfs), moved onto Target as it is rather than copied.
	Detached bool
}

// ErrLeakedFD means the new program would have started with a descriptor
// other than the ones it was given; it was killed before running.
var ErrLeakedFD = errors.New("proc: descriptor leaked into tool")
