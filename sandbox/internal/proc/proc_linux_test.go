//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox"
)

// TestExecutableAnyDescriptor: whatever number the executable's descriptor
// has, and whatever other runs close meanwhile, the tool runs. Go's child,
// between fork and exec, moves its error pipe to the number just above the
// highest descriptor it is given, when the pipe's own number is lower, and
// whatever was open there in the child is replaced. Lower numbers are free
// when concurrent runs have just closed theirs; an executable whose
// descriptor was the number above the child's stdout and stderr was then
// replaced by the pipe, and exec failed with EACCES ("fork/exec
// /proc/self/fd/N: permission denied", about once in a few thousand runs
// with 16 at once). Here descriptors below are closed just before the start,
// as a concurrent run would, and the executable is placed at each number
// from the lowest free one up, so that one of them is the number just above.
func TestExecutableAnyDescriptor(t *testing.T) {
	path, err := exec.LookPath("true")
	if err != nil {
		t.Fatalf("no true(1) on this host: %v", err)
	}
	exe, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	defer func() { beforeStart = func() {} }()
	limits := sandbox.Manifest{}.WithDefaults().Limits
	for offset := 0; offset < 16; offset++ {
		// Four placeholders at the lowest free numbers, closed just before
		// the start: the holes another run's end leaves.
		var holes []*os.File
		for range 4 {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			holes = append(holes, f)
		}
		beforeStart = func() {
			for _, f := range holes {
				f.Close()
			}
		}
		first, last := holes[0].Fd(), holes[3].Fd()
		fd := int(last) + 1 + offset
		if err := syscall.Dup3(int(exe.Fd()), fd, syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), path)
		out, err := Run(context.Background(), Spec{Tier: "process", Exe: f, Args: []string{path}, Dir: t.TempDir(), Limits: limits})
		f.Close()
		if err != nil || out.Status != sandbox.StatusOK {
			t.Errorf("executable at fd %d, holes %d to %d: %v, %s %q", fd, first, last, err, out.Status, out.Reason)
		}
	}
}

// pidnsEnv marks the test binary that TestNoKillAfterReap started again as
// pid 1 of new pid and mount namespaces.
const pidnsEnv = "WRIT_PROC_TEST_IN_PIDNS"

// TestNoKillAfterReap: once the tool is reaped its pid is free, and a new
// process that takes it may lead a process group of its own (another tool,
// any process of the host). The run must not signal that group. The test
// runs in a pid namespace of its own, where it alone forks and can choose
// the next pid (ns_last_pid): right after the tool's reap it starts a
// victim with the tool's pid as its own group, and checks that the victim
// was not killed.
func TestNoKillAfterReap(t *testing.T) {
	if os.Getenv(pidnsEnv) != "1" {
		if os.Geteuid() != 0 {
			requireHost(t, errors.New("needs root (a pid namespace)"))
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestNoKillAfterReap$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), pidnsEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNoKillAfterReap") {
			t.Fatalf("in a pid namespace: %v\n%s", err, out)
		}
		return
	}
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1 in a new pid namespace", os.Getpid())
	}
	// A /proc of this namespace: the tiers read /proc/PID of their tools.
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { afterReap = func(int) {} }()
	limits := sandbox.Manifest{}.WithDefaults().Limits
	// Go's own threads take pids too: try until the victim got the pid.
	for try := 0; try < 20; try++ {
		var victim *exec.Cmd
		toolPid := 0
		afterReap = func(pid int) {
			toolPid = pid
			if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
				t.Errorf("ns_last_pid: %v", err)
				return
			}
			victim = exec.Command(sleep, "60")
			victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := victim.Start(); err != nil {
				t.Errorf("victim: %v", err)
			}
		}
		out, err := Run(context.Background(), Spec{Tier: "test", Path: "/bin/true", Args: []string{"true"},
			Dir: "/", Limits: limits})
		if err != nil || out.Status != sandbox.StatusOK {
			t.Fatalf("run: %v %s %q", err, out.Status, out.Reason)
		}
		if victim == nil || victim.Process == nil {
			t.Fatal("no victim started")
		}
		// A SIGKILL the run sent is pending before this SIGTERM, and wins.
		victim.Process.Signal(syscall.SIGTERM)
		victim.Wait()
		ws := victim.ProcessState.Sys().(syscall.WaitStatus)
		if victim.Process.Pid != toolPid {
			continue
		}
		if ws.Signal() != syscall.SIGTERM {
			t.Fatalf("the process that took the tool's pid %d as its group died of %v: the run signalled it", toolPid, ws.Signal())
		}
		return
	}
	t.Fatal("no victim took the tool's pid in 20 tries")
}
