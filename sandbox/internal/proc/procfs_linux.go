package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// mountBinaries are where mount(8) is looked for (util-linux, Debian's
// mount package).
var mountBinaries = []string{"/usr/bin/mount", "/bin/mount"}

// MountBinary is the mount(8) that PidNS uses, "" when there is none.
func MountBinary() string { return binary(mountBinaries) }

// pidNamespace makes the calling thread's children start in a new pid
// namespace and its own mount namespace (a slave of the host's), starts
// cat(1) reading a pipe of ours there as the namespace's init, and mounts a procfs of
// the namespace over /proc (a procfs shows the pid namespace of the process
// that mounts it: mount(8) runs in it, no shell, fixed arguments). The
// tool, started next by the same thread, sees its own processes only. The
// returned function kills the init, and with it whatever is left in the
// namespace; the init also ends when the agent dies. The thread must be
// locked and never reused.
func pidNamespace() (func(), error) {
	mnt, cat := MountBinary(), binary(catBinaries)
	if mnt == "" || cat == "" {
		return nil, errors.New("proc: a pid namespace needs mount(8) and cat(1) (Debian: mount, coreutils)")
	}
	if err := unix.Unshare(unix.CLONE_NEWPID | unix.CLONE_NEWNS); err != nil {
		return nil, fmt.Errorf("proc: new pid namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return nil, fmt.Errorf("proc: private mount namespace: %w", err)
	}
	// No Pdeathsig here nor for the tool: a process born in another pid
	// namespace sees parent pid 0, and Go's child would take that for a
	// dead parent and kill itself. The init reads a pipe of ours instead,
	// and ends at its end of file: when stop closes it, or when the agent
	// dies. Its death kills every process of the namespace.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	init := exec.Command(cat)
	init.Env, init.Stdin = []string{}, r
	err = init.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("proc: start the pid namespace's init: %w", err)
	}
	stop := func() {
		w.Close()
		_ = init.Process.Kill()
		_ = init.Wait()
	}
	m := exec.Command(mnt, "-t", "proc", "-o", "nosuid,nodev,noexec", "proc", "/proc")
	m.Env = []string{}
	if b, err := m.CombinedOutput(); err != nil {
		stop()
		return nil, fmt.Errorf("proc: mount the tool's /proc: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return stop, nil
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
// /proc/self/fd/N), and the device and inode it reaches.
func findWorkDir(dir string) (workDir, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return workDir{}, fmt.Errorf("proc: working directory: %w", err)
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
