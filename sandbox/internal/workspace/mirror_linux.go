package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Mirror is a workspace bounded, for one run, by a size-limited tmpfs that
// the sandbox mounted in a mount namespace of its own (bwrap's --size and
// --tmpfs), for an agent that cannot mount one itself. The agent reaches
// that tmpfs through /proc while the sandbox is held before its tool
// starts, copies the workspace into it, and keeps it open: the open
// directory keeps the tmpfs alive once the sandbox and its namespace are
// gone, and the tool's work is copied back from it then, when nothing of the
// tool runs any more. The tool never sees the workspace directory itself.
type Mirror struct {
	dir  string
	size int64

	tmp    atomic.Pointer[os.File] // the tmpfs's root, once Fill succeeded
	once   sync.Once
	closed error
}

// NewMirror returns the Mirror of dir, bounded to size bytes.
func NewMirror(dir string, size int64) *Mirror { return &Mirror{dir: dir, size: size} }

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// Fill takes the tmpfs at path (absolute, in the sandbox's root) of the
// sandbox's process whose /proc directory proc is (opened by the caller,
// which pins that process: a name below it never reaches another process
// that took its pid since), whose mount namespace must be the one numbered
// mntns (as the sandbox reported it), and copies dir into it: regular files,
// directories and links, at most size bytes and one entry per 4 KiB
// (ErrDiskLimit past that). Call it once, while the sandbox is held after
// its setup and before anything of the tool runs.
func (m *Mirror) Fill(proc *os.File, mntns uint64, path string) error {
	if m.tmp.Load() != nil {
		return errors.New("workspace: mirror filled twice")
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
		return fmt.Errorf("workspace: mirror path %q is not a clean absolute path other than /", path)
	}
	pd := int(proc.Fd())
	var ns unix.Stat_t
	if err := unix.Fstatat(pd, "ns/mnt", &ns, 0); err != nil {
		return fmt.Errorf("workspace: the sandbox's mount namespace: %w", err)
	}
	if ns.Ino != mntns {
		return fmt.Errorf("workspace: the process is in mount namespace %d, not the sandbox's %d", ns.Ino, mntns)
	}
	fd, err := unix.Openat(pd, "root"+path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("workspace: the sandbox's %s: %w", path, err)
	}
	tmp := os.NewFile(uintptr(fd), "tmpfs")
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil || fs.Type != tmpfsMagic {
		tmp.Close()
		return fmt.Errorf("workspace: the sandbox's %s is not a tmpfs (type %#x, %v)", path, fs.Type, err)
	}
	dst, err := rootOf(tmp)
	if err != nil {
		tmp.Close()
		return err
	}
	defer dst.Close()
	src, err := os.OpenRoot(m.dir)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("workspace: %w", err)
	}
	defer src.Close()
	if err := copyTree(src, dst, newBudget(m.size), rules{}); err != nil {
		tmp.Close()
		return fmt.Errorf("workspace: copy its contents into the sandbox's tmpfs: %w", err)
	}
	m.tmp.Store(tmp)
	return nil
}

// rootOf opens an os.Root on the directory f, whatever mount namespace
// it is in (or none, once that namespace is gone).
func rootOf(f *os.File) (*os.Root, error) {
	r, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("workspace: open the sandbox's tmpfs: %w", err)
	}
	return r, nil
}

// Full reports whether the tmpfs has no room left.
func (m *Mirror) Full() bool {
	tmp := m.tmp.Load()
	if tmp == nil {
		return false
	}
	var s unix.Statfs_t
	return unix.Fstatfs(int(tmp.Fd()), &s) == nil && s.Bavail == 0
}

// Watch is Quota.Watch for the mirror: the context is also cancelled as
// soon as the tmpfs is full (checked every 10 ms, once Fill succeeded).
func (m *Mirror) Watch(ctx context.Context) (context.Context, func() bool) {
	return watch(ctx, m.Full)
}

// HandBack stops the watch (stop, from Watch) and closes m; full says
// whether the tool filled the workspace, or left more in it than fits.
func (m *Mirror) HandBack(stop func() bool) (full bool, err error) {
	full = stop()
	err = m.Close()
	if errors.Is(err, ErrDiskLimit) {
		return true, nil
	}
	return full, err
}

// Close hands the workspace back once every process of the sandbox is
// dead: dir's contents are replaced by the tmpfs's, copied as Fill copies
// (at most size bytes and one entry per 4 KiB: ErrDiskLimit past that, with
// what fitted kept), none of them followed or opened but as a regular file,
// none setuid or setgid, modes the tool took from its own files given back
// to be read; then the tmpfs is let go, which frees it. A Mirror never
// filled leaves dir as it was. Later calls return the first one's error.
func (m *Mirror) Close() error {
	m.once.Do(func() {
		tmp := m.tmp.Load()
		if tmp == nil {
			return
		}
		m.closed = m.handBack(tmp)
		m.tmp.Store(nil) // Full is false from now on
		tmp.Close()
	})
	return m.closed
}

func (m *Mirror) handBack(tmp *os.File) error {
	src, err := rootOf(tmp)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(m.dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer dst.Close()
	if err := clear(dst); err != nil {
		return fmt.Errorf("workspace: empty it for the hand-back: %w", err)
	}
	return copyTree(src, dst, newBudget(m.size), rules{unlock: true})
}

// watch returns a context cancelled as ctx is, and also as soon as full
// reports true (checked every 10 ms), and a function that stops watching and
// reports whether it filled, once the watch has ended (full is not called
// after it returns); call it at least once (more is harmless).
func watch(ctx context.Context, full func() bool) (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(ctx)
	var hit atomic.Bool
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if full() {
					hit.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	var once sync.Once
	return ctx, func() bool {
		once.Do(func() { close(done); cancel(); <-ended })
		return hit.Load() || full()
	}
}
