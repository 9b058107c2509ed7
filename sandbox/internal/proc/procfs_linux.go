package proc

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// pidNamespace makes the calling thread's children start in a new pid
// namespace and its own mount namespace (a slave of the host's), and
// starts the namespace's init: a child of this thread that mounts a procfs
// of the namespace over /proc and then becomes cat(1) reading a pipe of
// ours. A procfs shows the pid namespace of the process that mounts it, so
// the mount must be made from inside, and the init makes it with the system
// call itself between its fork and its exec: no mount(8), no shell, one
// exec. The tool, started next by the same thread, sees its own processes
// only. The returned function kills the init, and with it whatever is left
// in the namespace; the init also ends when the agent dies (end of file on
// its pipe, and SIGKILL when this thread ends). The thread must be locked
// and never reused.
func pidNamespace() (func(), error) {
	cat := binary(catBinaries)
	if cat == "" {
		return nil, errors.New("proc: a pid namespace needs cat(1) (Debian: coreutils)")
	}
	if err := unix.Unshare(unix.CLONE_NEWPID | unix.CLONE_NEWNS); err != nil {
		return nil, fmt.Errorf("proc: new pid namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return nil, fmt.Errorf("proc: private mount namespace: %w", err)
	}
	// No Pdeathsig for the tool: a process born in another pid namespace
	// sees parent pid 0, and Go's child would take that for a dead parent.
	// The init's death kills every process of the namespace instead.
	pid, w, err := startInit(cat, true)
	if err != nil {
		return nil, err
	}
	return func() {
		w.Close()
		_ = unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				return
			}
		}
	}, nil
}

var catBinaries = []string{"/usr/bin/cat", "/bin/cat"}

func binary(paths []string) string {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

var pidfdOnce sync.Once

// warmPidfd makes the os package check, once, whether pidfds work: it
// checks by starting a child of the calling thread, which must not be a
// thread whose children start in a tool's new pid namespace (that child
// would be its init, and exit, and the namespace would take no tool).
func warmPidfd() {
	pidfdOnce.Do(func() {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Release()
		}
	})
}

// workDir is a directory found in one mount namespace, to be entered in
// another.
type workDir struct {
	path string
	dev  uint64
	ino  uint64
}

// findWorkDir reads where dir is: its target when it is a link (such as
// /proc/self/fd/N), and the device and inode it reaches — or, when mount
// is set (Spec.DirMount), those of the mount's root, which the new
// namespace shows at that path.
func findWorkDir(dir string, mount *os.File) (workDir, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return workDir{}, fmt.Errorf("proc: working directory: %w", err)
	}
	if mount != nil {
		// The directory the new namespace shows there is the mount's root.
		if err := unix.Fstat(int(mount.Fd()), &st); err != nil {
			return workDir{}, fmt.Errorf("proc: working directory: %w", err)
		}
	}
	w := workDir{path: dir, dev: st.Dev, ino: st.Ino}
	if target, err := os.Readlink(dir); err == nil {
		w.path = target
	}
	return w, nil
}

// chdir changes the calling thread's working directory to w's path, and
// checks that it is the same directory.
func (w workDir) chdir() error {
	if err := unix.Chdir(w.path); err != nil {
		return fmt.Errorf("proc: working directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(".", &st); err != nil || st.Dev != w.dev || st.Ino != w.ino {
		return fmt.Errorf("proc: working directory %s changed while the tool started", w.path)
	}
	return nil
}
