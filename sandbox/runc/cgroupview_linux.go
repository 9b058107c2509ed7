package runc

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// hybridUnified returns the cgroup2 mount of a hybrid host, a cgroup v1
// layout (a tmpfs at /sys/fs/cgroup) with the unified hierarchy mounted
// beside the v1 controllers at /sys/fs/cgroup/unified; "" on any other
// host. crun 1.8 recognises the layout the same way.
func hybridUnified() string {
	unified := filepath.Join(cgroupRoot, "unified")
	var root, u unix.Statfs_t
	if unix.Statfs(cgroupRoot, &root) != nil || root.Type != unix.TMPFS_MAGIC {
		return ""
	}
	if unix.Statfs(unified, &u) != nil || u.Type != unix.CGROUP2_SUPER_MAGIC {
		return ""
	}
	return unified
}

// startHidden starts cmd from a thread in a private mount namespace (its
// mounts slaves of the host's, nothing propagating back) where the mount
// point hide is detached, so cmd and everything it starts see the host's
// mounts without it; "" starts cmd as it is. The thread is never handed
// back: it ends with the goroutine that entered the namespace (the
// process's main thread, when it was that one, stays wedged instead, so
// /proc/self shows that namespace: read /proc/thread-self, as proc does).
func startHidden(cmd *exec.Cmd, hide string) error {
	if hide == "" {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is changed
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("private mount namespace: %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			errc <- fmt.Errorf("private mount namespace: %w", err)
			return
		}
		if err := unix.Unmount(hide, unix.MNT_DETACH); err != nil {
			errc <- fmt.Errorf("unmount %s: %w", hide, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
