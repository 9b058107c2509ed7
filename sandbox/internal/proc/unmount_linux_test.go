//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/writhq/writ/sandbox"
)

// TestUnmount: a process started with Spec.Unmount does not see the
// mount (the directory under it shows instead), a process started without
// does, and the host keeps it: the detach happens in the process's own
// mount namespace only.
func TestUnmount(t *testing.T) {
	if os.Geteuid() != 0 {
		requireHost(t, errors.New("needs root (a mount namespace)"))
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "under"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("writ-test", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	if err := os.WriteFile(filepath.Join(dir, "mark"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	limits := sandbox.Manifest{}.WithDefaults().Limits
	for _, c := range []struct {
		unmount []string
		want    string
	}{
		{nil, "mark"},
		{[]string{dir}, "under"},
		{nil, "mark"}, // the host's mount is still there
	} {
		out, err := Run(context.Background(), Spec{Tier: "test", Path: sh, Dir: "/", Limits: limits,
			Unmount: c.unmount, Args: []string{"sh", "-c", `ls "$0"`, dir}})
		if err != nil || out.Status != sandbox.StatusOK {
			t.Fatalf("run with Unmount %q: %v %s %q %s", c.unmount, err, out.Status, out.Reason, out.Stderr)
		}
		if got := strings.TrimSpace(string(out.Output)); got != c.want {
			t.Errorf("with Unmount %q the process sees %q in %s, want %q", c.unmount, got, dir, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "mark")); err != nil {
		t.Errorf("the host lost its mount: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "not-a-mount")
	if out, err := Run(context.Background(), Spec{Tier: "test", Path: sh, Dir: "/", Limits: limits,
		Unmount: []string{bad}, Args: []string{"sh", "-c", "true"}}); err == nil && out.Status == sandbox.StatusOK {
		t.Errorf("a run asked to unmount %s, which is no mount, ran: %s", bad, out.Status)
	}
}
