//go:build linux

package proc

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"

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
