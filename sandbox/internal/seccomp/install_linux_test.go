//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary the child of TestKernelAgrees.
const childEnv = "WRIT_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

// probes are system calls made for real under the installed filter, with
// arguments that could do no harm had the filter let them through.
var probes = []struct {
	name string
	nr   uintptr
	args [3]uintptr
	want syscall.Errno // 0: not refused by the filter (any other answer)
}{
	{"getpid", unix.SYS_GETPID, [3]uintptr{}, 0},
	{"unshare NEWUSER", unix.SYS_UNSHARE, [3]uintptr{unix.CLONE_NEWUSER}, unix.EPERM},
	{"setns bad fd", unix.SYS_SETNS, [3]uintptr{^uintptr(0), 0}, unix.EPERM},
	{"keyctl", unix.SYS_KEYCTL, [3]uintptr{^uintptr(0)}, unix.EPERM},
	{"bpf", unix.SYS_BPF, [3]uintptr{^uintptr(0)}, unix.EPERM},
	{"clone3 no args", unix.SYS_CLONE3, [3]uintptr{0, 0}, unix.ENOSYS},
	{"ioctl TIOCSTI bad fd", unix.SYS_IOCTL, [3]uintptr{^uintptr(0), unix.TIOCSTI, 0}, unix.EPERM},
	{"ioctl TCGETS bad fd", unix.SYS_IOCTL, [3]uintptr{^uintptr(0), unix.TCGETS, 0}, 0},
	{"ptrace TRACEME", unix.SYS_PTRACE, [3]uintptr{unix.PTRACE_TRACEME}, unix.EPERM},
}

// child installs Program on its thread, reports each probe's errno on
// stdout, and on amd64 finally makes an x32 call, which must kill it.
func child() int {
	runtime.LockOSThread() // never unlocked: the thread carries the filter
	p, err := Program()
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	if err := InstallThread(Encode(p)); err != nil {
		fmt.Println("error", err)
		return 2
	}
	for _, pr := range probes {
		_, _, e := unix.RawSyscall(pr.nr, pr.args[0], pr.args[1], pr.args[2])
		fmt.Printf("%s\t%d\n", pr.name, int(e))
	}
	fmt.Println("done")
	if runtime.GOARCH == "amd64" {
		// No core file of the kill left in the package directory.
		_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
		unix.RawSyscall(0x40000000|unix.SYS_GETPID, 0, 0, 0)
		fmt.Println("survived x32")
	}
	return 0
}

// TestKernelAgrees installs Program with InstallThread in a child process
// and makes real system calls: the kernel answers what the VM tests expect
// (EPERM, ENOSYS for clone3, untouched calls untouched), and on amd64 an
// x32 call kills the process with SIGSYS.
func TestKernelAgrees(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	got := map[string]syscall.Errno{}
	done := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error ") {
			t.Fatalf("child: %s", line)
		}
		if line == "done" {
			done = true
			continue
		}
		var name string
		var e int
		if i := strings.LastIndexByte(line, '\t'); i > 0 {
			if _, serr := fmt.Sscan(line[i+1:], &e); serr == nil {
				name = line[:i]
			}
		}
		if name != "" {
			got[name] = syscall.Errno(e)
		}
	}
	if !done {
		t.Fatalf("child did not finish its probes: err %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for _, pr := range probes {
		e, ok := got[pr.name]
		switch {
		case !ok:
			t.Errorf("%s: no answer", pr.name)
		case pr.want != 0 && e != pr.want:
			t.Errorf("%s: errno %d (%v), want %v", pr.name, int(e), e, pr.want)
		case pr.want == 0 && (e == unix.EPERM || e == unix.ENOSYS):
			t.Errorf("%s: errno %v, want the call not refused by the filter", pr.name, e)
		}
	}
	if runtime.GOARCH != "amd64" {
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child after an x32 call: err %v, want killed by SIGSYS\nstdout:\n%s", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("child after an x32 call: %v, want killed by SIGSYS", ee)
	}
}
