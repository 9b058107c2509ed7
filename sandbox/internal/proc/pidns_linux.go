package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// A pid namespace costs its making on every run of a root agent's process
// tool: a mount namespace copied from the host's, the init forked and
// cat(1) exec'd — 1.5 to 4.5 ms on the project's 2-core VM at load 20, the
// largest part of the tier's start. So namespaces are made ahead of time,
// as network namespaces are (netns_linux.go): a run takes a ready one,
// whose init has mounted its /proc, enters it (two setns calls), shows its
// workspace in it, and the pool makes another in the background. Each is
// used by one run only and ends with it, as one made for the run would.
// The ready ones hold nothing but their idle init.

// pidnsReady is how many pid namespaces are kept ready.
const pidnsReady = 2

// readyPidNS is a pid namespace with its init, and the mount namespace in
// which the init mounted the namespace's /proc.
type readyPidNS struct {
	mnt, pid *os.File // ns/mnt and ns/pid_for_children of the thread that made them
	init     int
	stdin    *os.File // the init's stdin: closing it ends the init
}

type pidnsPool struct {
	mu      sync.Mutex
	ready   []*readyPidNS
	filling bool
}

var readyPidNamespaces pidnsPool

// take returns a ready namespace (nil when none is) and starts making more
// when fewer than pidnsReady are left.
func (p *pidnsPool) take() *readyPidNS {
	p.mu.Lock()
	var r *readyPidNS
	if n := len(p.ready); n > 0 {
		r, p.ready = p.ready[n-1], p.ready[:n-1]
	}
	fill := !p.filling && len(p.ready) < pidnsReady
	p.filling = p.filling || fill
	p.mu.Unlock()
	if fill {
		go p.fill()
	}
	return r
}

func (p *pidnsPool) fill() {
	for {
		r, _ := newPidNS()
		p.mu.Lock()
		if r != nil {
			p.ready = append(p.ready, r)
		}
		if r == nil || len(p.ready) >= pidnsReady {
			p.filling = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}

// newPidNS makes a pid namespace and its mount namespace, as pidNamespace
// does, on a thread of its own that ends once they are made. The init has
// no parent-death signal (it would fire when that thread ends): it ends
// when the agent does through end of file on its stdin, whose write end
// only the agent holds (close-on-exec), and its death kills whatever
// else the namespace holds.
func newPidNS() (*readyPidNS, error) {
	type result struct {
		r   *readyPidNS
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread has left the agent's namespaces and
		// ends with this goroutine.
		runtime.LockOSThread()
		r, err := makePidNS()
		ch <- result{r, err}
	}()
	res := <-ch
	return res.r, res.err
}

func makePidNS() (*readyPidNS, error) {
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
	// The init mounts the new namespace's procfs over /proc, where this
	// thread is not: its namespaces are opened through the procfs it
	// sees now. pid_for_children opens only once the init exists.
	ns, err := os.Open("/proc/thread-self/ns")
	if err != nil {
		return nil, fmt.Errorf("proc: new pid namespace: %w", err)
	}
	defer ns.Close()
	mnt, err := os.Open("/proc/thread-self/ns/mnt")
	if err != nil {
		return nil, fmt.Errorf("proc: new pid namespace: %w", err)
	}
	pid, w, err := startInit(cat, false)
	if err != nil {
		mnt.Close()
		return nil, err
	}
	r := &readyPidNS{init: pid, stdin: w, mnt: mnt}
	fd, err := unix.Openat(int(ns.Fd()), "pid_for_children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.end()
		return nil, fmt.Errorf("proc: new pid namespace: %w", err)
	}
	r.pid = os.NewFile(uintptr(fd), "pid_for_children")
	return r, nil
}

// alive reports whether the init has not ended: a namespace whose init
// ended takes no new process.
func (r *readyPidNS) alive() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, r.init, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo == 0
}

// end kills the init, and with it whatever is left in the namespace, and
// reaps it.
func (r *readyPidNS) end() {
	r.stdin.Close()
	_ = unix.Kill(r.init, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(r.init, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	for _, f := range []*os.File{r.mnt, r.pid} {
		if f != nil {
			f.Close()
		}
	}
}

// enterReadyPidNS moves the calling thread (locked, never reused) into a
// ready pid namespace's mount namespace, where it shows the directory dir
// (the tool's workspace, as the agent sees it now: the tmpfs of its disk
// limit included) at the same path, wd.path — or mount there instead when
// set (Spec.DirMount) — and makes its children start in that pid
// namespace. ok is false, with the thread where it was, when
// no namespace is ready or this one cannot be used: the caller makes one.
// An error means the thread is stuck between namespaces: the run fails.
func enterReadyPidNS(dir string, wd workDir, mount *os.File) (stop func(), ok bool, err error) {
	r := readyPidNamespaces.take()
	if r == nil {
		return nil, false, nil
	}
	if !r.alive() {
		r.end()
		return nil, false, nil
	}
	host, err := os.Open("/proc/thread-self/ns/mnt")
	if err != nil {
		r.end()
		return nil, false, nil
	}
	defer host.Close()
	tree := -1
	if mount != nil {
		tree = int(mount.Fd())
	} else if dir != "" {
		// A copy of the workspace's mount as the agent sees it: a tmpfs
		// mounted since the namespace was made is not in it (a host whose
		// mounts are private propagates nothing).
		if tree, err = unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
			r.end()
			return nil, false, nil
		}
		defer unix.Close(tree)
	}
	// setns into a mount namespace needs a filesystem context of the
	// thread's own; Go's threads share one.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		r.end()
		return nil, false, nil
	}
	if err := unix.Setns(int(r.mnt.Fd()), unix.CLONE_NEWNS); err != nil {
		r.end()
		return nil, false, nil
	}
	back := func() (func(), bool, error) {
		r.end()
		if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNS); err != nil {
			return nil, false, fmt.Errorf("proc: back to the agent's mount namespace: %w", err)
		}
		return nil, false, nil
	}
	if tree >= 0 {
		if err := placeMount(tree, wd.path); err != nil {
			return back()
		}
	}
	if err := unix.Setns(int(r.pid.Fd()), unix.CLONE_NEWPID); err != nil {
		return back()
	}
	return r.end, true, nil
}

// placeMount moves the detached mount onto path in the calling thread's
// mount namespace.
func placeMount(mount int, path string) error {
	if err := unix.MoveMount(mount, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("proc: mount the workspace on %s: %w", path, err)
	}
	return nil
}
