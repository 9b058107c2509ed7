package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/sandbox"
)

// TestReadyPidNamespace: a run of a root agent that takes a pid namespace
// made ahead of time gets what one made for it gives: the tool is the
// second process of its namespace (after the init), its /proc shows the
// namespace's processes only, and its working directory is the workspace as
// the agent sees it at the start, a tmpfs mounted on it after the
// namespace was made included. The namespace ends with the run: its init
// is gone afterwards.
func TestReadyPidNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		requireHost(t, errors.New("needs root (a pid namespace)"))
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newPidNS()
	if err != nil {
		t.Fatal(err)
	}
	// Mounted after the namespace was made: on a host whose mounts are
	// private it reaches the namespace only through the run's own copy.
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("writ-test", ws, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(ws, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(ws, "mark"), []byte("here"), 0o644); err != nil {
		t.Fatal(err)
	}
	readyPidNamespaces.mu.Lock()
	old := readyPidNamespaces.ready
	readyPidNamespaces.ready = []*readyPidNS{r}
	readyPidNamespaces.filling = true // no other: this run takes r
	readyPidNamespaces.mu.Unlock()
	defer func() {
		readyPidNamespaces.mu.Lock()
		readyPidNamespaces.ready = append(readyPidNamespaces.ready, old...)
		readyPidNamespaces.filling = false
		readyPidNamespaces.mu.Unlock()
	}()

	limits := sandbox.Manifest{}.WithDefaults().Limits
	out, err := Run(context.Background(), Spec{Tier: "test", Path: sh, Dir: ws, PidNS: true, Limits: limits,
		Args: []string{"sh", "-c", `echo $$; ls /proc | grep -c '^[0-9]'; cat mark; echo; stat -f -c %T .`}})
	if err != nil || out.Status != sandbox.StatusOK {
		t.Fatalf("run: %v %s %q %s", err, out.Status, out.Reason, out.Stderr)
	}
	got := strings.Fields(string(out.Output))
	// sh is 2; /proc shows the init, sh, ls and grep.
	if want := []string{"2", "4", "here", "tmpfs"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q (pid, processes in /proc, the workspace's mark and file system)", got, want)
	}
	// The run's thread ends the namespace as it finishes, after Run
	// returned.
	eventually.NoErrorWithin(t, time.Minute, fmt.Sprintf("the namespace's init %d to end after the run", r.init), func() error {
		if err := unix.Kill(r.init, 0); !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("kill 0: %v", err)
		}
		return nil
	})
	readyPidNamespaces.mu.Lock()
	left := len(readyPidNamespaces.ready)
	readyPidNamespaces.mu.Unlock()
	if left != 0 {
		t.Errorf("%d ready namespaces left, want the one taken", left)
	}
}
