//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/writhq/writ/internal/jsonx"
)

// platformOp runs the operations that need processes and /proc.
func platformOp(p params) bool {
	switch p.Op {
	case "fds":
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			fail("fds: %v", err)
		}
		// Skip the descriptor ReadDir used for the directory itself, the Go
		// runtime's own poller (epoll and eventfd) and the cgroup files the
		// runtime keeps open to follow its CPU quota.
		var fds []string
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			if strings.Contains(target, "/fd") || target == "" || strings.HasPrefix(target, "anon_inode:[event") ||
				strings.HasPrefix(target, "/sys/fs/cgroup/") {
				continue
			}
			fds = append(fds, e.Name())
		}
		fmt.Print(strings.Join(fds, " "))
	case "spawn", "spawngroup":
		// A grandchild that tries to outlive the tool and, if it does,
		// leaves a file in the workspace: in a session of its own (spawn),
		// or in the tool's own process group (spawngroup).
		// Its params are in a pipe before it starts (an exec.Cmd copying
		// goroutine would die with the tool), and the tool exits only once
		// the grandchild said it is lingering.
		params, paramsW, err := os.Pipe()
		if err != nil {
			fail("spawn: %v", err)
		}
		fmt.Fprintf(paramsW, `{"op":"linger","ms":%d,"path":%q}`, p.MS, p.Path)
		paramsW.Close()
		ready, readyW, err := os.Pipe()
		if err != nil {
			fail("spawn: %v", err)
		}
		cmd := exec.Command("/proc/self/exe")
		cmd.Stdin, cmd.Stdout = params, readyW
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: p.Op == "spawn"}
		if err := cmd.Start(); err != nil {
			fail("spawn: %v", err)
		}
		params.Close()
		readyW.Close()
		if n, _ := ready.Read(make([]byte, 1)); n != 1 {
			fail("spawn: the grandchild did not start lingering")
		}
		fmt.Print(cmd.Process.Pid)
	case "ids":
		groups, err := os.Getgroups()
		if err != nil {
			fail("getgroups: %v", err)
		}
		if groups == nil {
			groups = []int{}
		}
		b, _ := jsonx.Marshal(map[string]any{"uid": os.Getuid(), "euid": os.Geteuid(),
			"gid": os.Getgid(), "egid": os.Getegid(), "groups": groups})
		os.Stdout.Write(b)
	case "traceme":
		// One thread makes itself traced by the tool's parent (the agent),
		// then gets a signal, which stops it until its tracer acts.
		done := make(chan string, 1)
		go func() {
			runtime.LockOSThread() // this thread is traced: never reused
			if _, _, e := syscall.RawSyscall(syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0); e != 0 {
				done <- "traceme: " + e.Error()
				return
			}
			syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGURG)
			done <- "traced"
		}()
		fmt.Print(<-done)
		if p.MS > 0 {
			time.Sleep(time.Duration(p.MS) * time.Millisecond)
		}
	case "linger":
		signalIgnore()
		os.Stdout.Write([]byte("L")) // to the tool that waits for it
		os.Stdout.Close()
		time.Sleep(time.Duration(p.MS) * time.Millisecond)
		os.WriteFile(p.Path, []byte("alive"), 0o644)
	case "syscalls":
		// Each call is harmless if it succeeds here (a new user namespace
		// for one thread, a key lookup, ...): the point is whether it is
		// allowed at all.
		try := func(name string, nr uintptr, a ...uintptr) string {
			a = append(a, 0, 0, 0, 0, 0, 0)
			_, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
			res := "OK"
			switch e {
			case 0:
			case syscall.EPERM:
				res = "EPERM"
			case syscall.ENOSYS:
				res = "ENOSYS"
			default:
				res = e.Error()
			}
			return name + "=" + res
		}
		runtime.LockOSThread() // unshare changes this thread
		out := []string{
			try("unshare", syscall.SYS_UNSHARE, syscall.CLONE_NEWUSER),
			try("setns", sysSetns, 0, 0),
			try("mount", syscall.SYS_MOUNT, 0, 0, 0, 0, 0),
			// ATTACH to no process: ESRCH where ptrace is allowed, EPERM
			// where a filter refuses it. TRACEME would leave this thread
			// traced by the parent, which stops it at its next signal.
			try("ptrace", syscall.SYS_PTRACE, syscall.PTRACE_ATTACH, 0),
			try("keyctl", sysKeyctl, 0),
			try("bpf", sysBPF, 0, 0, 0),
			try("perf_event_open", syscall.SYS_PERF_EVENT_OPEN, 0, 0, 0, 0, 0),
			try("userfaultfd", sysUserfaultfd, 0),
			try("clone3", 435, 0, 0),
		}
		fmt.Print(strings.Join(out, "\n"))
	case "rlimits":
		// The limits getrlimit reports, in /proc/self/limits' format (a
		// kernel such as gVisor's may have no such file).
		var b strings.Builder
		for _, l := range []struct {
			name, unit string
			res        int
		}{{"cpu time", "seconds", syscall.RLIMIT_CPU}, {"core file size", "bytes", syscall.RLIMIT_CORE},
			{"open files", "files", syscall.RLIMIT_NOFILE}, {"address space", "bytes", syscall.RLIMIT_AS}} {
			var r syscall.Rlimit
			if err := syscall.Getrlimit(l.res, &r); err != nil {
				fail("getrlimit %s: %v", l.name, err)
			}
			v := func(x uint64) string {
				if x == ^uint64(0) {
					return "unlimited"
				}
				return fmt.Sprint(x)
			}
			fmt.Fprintf(&b, "Max %s %s %s %s\n", l.name, v(r.Cur), v(r.Max), l.unit)
		}
		fmt.Print(b.String())
	case "userns":
		// Start a child in a new user namespace (with a new network
		// namespace, the road to nf_tables): it must not start.
		cmd := exec.Command("/proc/self/exe")
		cmd.Stdin = strings.NewReader(`{"op":"exit","code":0}`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
		if err := cmd.Run(); err != nil {
			fail("userns: %v", err)
		}
		fmt.Print("userns created")
	case "procs":
		// Read the command line of every process /proc shows; print them
		// all, and how many there were (its own at least, when there is a
		// /proc at all).
		entries, err := os.ReadDir("/proc")
		if err != nil {
			fmt.Printf("no /proc: %v", err)
			return true
		}
		n := 0
		for _, e := range entries {
			if e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			n++
			fmt.Printf("%s: %q\n", e.Name(), b)
		}
		fmt.Printf("cmdlines=%d", n)
	case "forkbomb":
		n := 0
		for ; n < 10000; n++ {
			cmd := exec.Command("/proc/self/exe")
			cmd.Stdin = strings.NewReader(`{"op":"sleep","ms":3000}`)
			if cmd.Start() != nil {
				break
			}
		}
		fmt.Print(n)
	default:
		return false
	}
	return true
}

// signalIgnore makes the grandchild deaf to every signal it can ignore:
// only SIGKILL of the whole group, session or cgroup gets it.
func signalIgnore() {
	signal.Ignore(syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGPIPE, syscall.SIGQUIT)
}
