package landlock

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv carries the child's paths and ports; its presence makes the
// test binary the child of TestRestrictThread.
const childEnv = "WRIT_LANDLOCK_TEST_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(child(strings.Split(v, "\n")))
	}
	os.Exit(m.Run())
}

// abiOrMissing returns the kernel's ABI, or stops the test: a failure
// under CI=true, where the kernel must offer Landlock; a skip otherwise.
func abiOrMissing(t *testing.T) int {
	t.Helper()
	v, err := ABI()
	if err != nil {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("ABI() err = %v, want ErrUnsupported or a version", err)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Landlock on this kernel: %v", err)
		}
		t.Skipf("no Landlock on this kernel: %v", err)
	}
	return v
}

// TestABI: the probe answers a version of at least 1, the same every time.
func TestABI(t *testing.T) {
	t.Parallel()
	v := abiOrMissing(t)
	if v < 1 {
		t.Fatalf("ABI() = %d, want >= 1", v)
	}
	if again, err := ABI(); again != v || err != nil {
		t.Fatalf("second ABI() = %d, %v; want %d", again, err, v)
	}
	if fsRights(v)&unix.LANDLOCK_ACCESS_FS_READ_FILE == 0 || fsRights(1)&unix.LANDLOCK_ACCESS_FS_REFER != 0 {
		t.Fatalf("fsRights(%d) = %#x, fsRights(1) = %#x", v, fsRights(v), fsRights(1))
	}
}

// errnoOf is the errno an operation failed with, 0 if it did not fail.
func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return int(e)
	}
	return -1
}

// child confines its thread to the rules the parent passed and reports
// what each operation answers, as "name<TAB>errno" lines.
func child(args []string) int {
	ro, rw, outside, allowedPort, otherPort, abstract := args[0], args[1], args[2], args[3], args[4], args[5]
	runtime.LockOSThread() // never unlocked: the thread stays confined
	report := func(name string, err error) { fmt.Printf("%s\t%d\n", name, errnoOf(err)) }
	port, _ := strconv.Atoi(allowedPort)
	err := RestrictThread(Rules{
		ReadExec:   []string{"/usr", "/bin", "/lib", "/lib64", "/etc/ld.so.cache", ro, "/nonexistent/writ-landlock"},
		ReadWrite:  []string{rw},
		Devices:    []string{"/dev/null"},
		ConnectTCP: []int{port},
	})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	open := func(p string, flag int) error {
		fd, err := unix.Open(p, flag|unix.O_CLOEXEC, 0o600)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	report("read ro", open(filepath.Join(ro, "f"), unix.O_RDONLY))
	report("write ro", open(filepath.Join(ro, "f"), unix.O_WRONLY))
	report("create in ro", open(filepath.Join(ro, "new"), unix.O_WRONLY|unix.O_CREAT))
	report("read rw", open(filepath.Join(rw, "f"), unix.O_RDONLY))
	report("write rw", open(filepath.Join(rw, "f"), unix.O_WRONLY|unix.O_TRUNC))
	report("create in rw", open(filepath.Join(rw, "new"), unix.O_WRONLY|unix.O_CREAT))
	report("mkdir in rw", unix.Mkdir(filepath.Join(rw, "sub"), 0o700))
	report("unlink in rw", unix.Unlink(filepath.Join(rw, "new")))
	report("mknod char in rw", unix.Mknod(filepath.Join(rw, "null"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))))
	report("read outside", open(filepath.Join(outside, "f"), unix.O_RDONLY))
	report("list outside", open(outside, unix.O_RDONLY|unix.O_DIRECTORY))
	report("write outside", open(filepath.Join(outside, "f"), unix.O_WRONLY))
	report("/dev/null", open("/dev/null", unix.O_RDWR))
	report("/dev/zero", open("/dev/zero", unix.O_RDONLY))
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	fmt.Printf("no_new_privs\t%d\n", nnp)
	if err != nil {
		report("no_new_privs", err)
	}
	// A process started from the thread inherits the domain.
	report("cat rw", exec.Command("/bin/cat", filepath.Join(rw, "f")).Run())
	err = exec.Command("/bin/cat", filepath.Join(outside, "f")).Run()
	var ee *exec.ExitError
	fmt.Printf("cat outside exits\t%v\n", errors.As(err, &ee) && ee.ExitCode() != 0)
	connect := func(p string) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		n, _ := strconv.Atoi(p)
		return unix.Connect(fd, &unix.SockaddrInet4{Port: n, Addr: [4]byte{127, 0, 0, 1}})
	}
	report("connect allowed port", connect(allowedPort))
	report("connect other port", connect(otherPort))
	report("bind", func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}())
	report("connect abstract", func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + abstract})
	}())
	report("signal parent", unix.Kill(os.Getppid(), 0))
	// The rest of the process stays free: another thread reads outside.
	free := make(chan string)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		free <- fmt.Sprintf("other thread reads outside\t%d\nother thread no_new_privs\t%d", errnoOf(open(filepath.Join(outside, "f"), unix.O_RDONLY)), nnp)
	}()
	fmt.Println(<-free)
	fmt.Println("done")
	return 0
}

// answer is what the child reports for one operation.
type answer struct{ name, val string }

// TestRestrictThread confines one thread of a child process (a re-exec of
// the test binary) and checks each promise: read below ReadExec, read and
// write below ReadWrite but no device nodes, only the listed devices,
// nothing elsewhere; a missing path is skipped; the thread has
// no_new_privs; processes it starts inherit the domain; TCP connect only
// to the listed ports and no bind (ABI 4+); no abstract sockets or signals
// outside the domain (ABI 6+); the process's other threads stay free.
func TestRestrictThread(t *testing.T) {
	t.Parallel()
	v := abiOrMissing(t)
	ro, rw, outside := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{ro, rw, outside} {
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	abstract := fmt.Sprintf("writ-landlock-test-%d", os.Getpid())
	ul, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join([]string{ro, rw, outside, port(allowed), port(other), abstract}, "\n"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error ") {
			t.Fatalf("child: %s", line)
		}
		if name, val, ok := strings.Cut(line, "\t"); ok {
			got[name] = val
		}
	}
	if _, ok := got["other thread reads outside"]; !ok {
		t.Fatalf("child did not finish:\n%s\nstderr:\n%s", out, stderr.String())
	}
	eacces, eperm := strconv.Itoa(int(unix.EACCES)), strconv.Itoa(int(unix.EPERM))
	want := []answer{
		{"read ro", "0"},
		{"write ro", eacces},
		{"create in ro", eacces},
		{"read rw", "0"},
		{"write rw", "0"},
		{"create in rw", "0"},
		{"mkdir in rw", "0"},
		{"unlink in rw", "0"},
		{"mknod char in rw", eacces},
		{"read outside", eacces},
		{"list outside", eacces},
		{"write outside", eacces},
		{"/dev/null", "0"},
		{"/dev/zero", eacces},
		{"no_new_privs", "1"},
		{"cat rw", "0"},
		{"cat outside exits", "true"},
		{"other thread reads outside", "0"},
		{"other thread no_new_privs", "0"},
	}
	if v >= 4 {
		want = append(want,
			answer{"connect allowed port", "0"},
			answer{"connect other port", eacces},
			answer{"bind", eacces},
		)
	} else {
		t.Logf("Landlock ABI %d: TCP rules not checked (ABI 4+)", v)
	}
	if v >= 6 {
		want = append(want,
			answer{"connect abstract", eperm},
			answer{"signal parent", eperm},
		)
	} else {
		t.Logf("Landlock ABI %d: scopes not checked (ABI 6+)", v)
	}
	for _, w := range want {
		if g, ok := got[w.name]; !ok || g != w.val {
			t.Errorf("%s: got %q, want %q", w.name, g, w.val)
		}
	}
	if _, err := os.Stat(filepath.Join(rw, "null")); err == nil {
		t.Error("a device node was made in the workspace")
	}
	if b, err := os.ReadFile(filepath.Join(ro, "f")); err != nil || string(b) != "x" {
		t.Errorf("the read-only file changed: %q, %v", b, err)
	}
}
