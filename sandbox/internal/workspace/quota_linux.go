package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// source names the tmpfs mounts Limit makes, so that Release and a
// restarted agent recognise them.
const source = "writ-workspace"

// mounted holds the workspaces on which a run of this process is mounting
// or has mounted a tmpfs not yet handed back. A concurrent run of the same
// workspace waits until that mount is made, then works in it, bounded by
// it (or, if it failed, is refused); the last of the runs working in it
// hands it back, so that none loses what it writes to another's hand-back.
// A run arriving during the hand-back waits for it, then mounts afresh. The
// agent is the only process that mounts on its workspaces, so this
// replaces reading the mount table at every run (a third of the wasm
// tier's own CPU per run); Release, for what a crash left, still reads it.
var mounted = struct {
	sync.Mutex
	dirs map[string]*mounting
}{dirs: map[string]*mounting{}}

// mounting is one workspace's mount: ready is closed once it is made or
// failed (err); users counts the runs working in it; closing is set when
// the last has gone and its hand-back began, and done is closed when the
// hand-back ended.
type mounting struct {
	ready   chan struct{}
	err     error
	owner   *Quota // the run that mounted it, once ready without err
	users   int
	closing bool
	done    chan struct{}
}

// claim marks dir as being mounted by the caller (first true), or joins the
// mount another run of this process is making or has made.
func claim(dir string) (*mounting, bool) {
	for {
		mounted.Lock()
		m, ok := mounted.dirs[dir]
		switch {
		case !ok:
			m = &mounting{ready: make(chan struct{}), done: make(chan struct{}), users: 1}
			mounted.dirs[dir] = m
			mounted.Unlock()
			return m, true
		case !m.closing:
			m.users++
			mounted.Unlock()
			return m, false
		}
		done := m.done
		mounted.Unlock()
		<-done
	}
}

func unclaim(dir string) {
	mounted.Lock()
	delete(mounted.dirs, dir)
	mounted.Unlock()
}

// Quota is a workspace bounded, for one run, by a size-limited tmpfs
// mounted on it.
type Quota struct {
	dir     string
	size    int64
	scratch bool      // nothing copied in or back (LimitScratch)
	old     *os.Root  // the directory under the tmpfs (the mount's owner, unless scratch)
	shared  *mounting // the mount the run works in; nil when unbounded
	once    sync.Once
	closed  error
	// discarded is set by Close when it unmounted the scratch tmpfs this
	// run mounted (Discarded).
	discarded bool
}

// ErrDiskLimit means the workspace held more than its limit when it was
// handed back; the copy stopped there.
var ErrDiskLimit = errors.New("workspace: above its disk limit")

// Enforced reports whether a tmpfs bounds the workspace for this run: only
// a root agent mounts one, and concurrent runs of one workspace share the
// first one's.
func (q *Quota) Enforced() bool { return q != nil && q.shared != nil }

// Fresh reports whether this run mounted the tmpfs of a scratch workspace
// (LimitScratch): it held nothing when the run began.
func (q *Quota) Fresh() bool { return q.Enforced() && q.scratch && q.shared.owner == q }

// Discarded reports, after Close, whether this run mounted the tmpfs of a
// scratch workspace (Fresh) and its Close unmounted it: everything written
// in the workspace went to that tmpfs, which is gone, and the directory is
// as it was given. A run whose tmpfs another run still works in when it
// closes (that run hands it back) has not discarded it.
func (q *Quota) Discarded() bool { return q.Fresh() && q.discarded }

// Limit bounds everything a tool can write in dir during one run to size
// bytes: a tmpfs of that size (and 1 inode per 4 KiB of it), mounted nosuid
// and nodev on dir, receives a copy of dir's contents, and the tiers show it
// to the tool as its workspace; Close copies it back and unmounts it. Copies
// take regular files, directories and symbolic links (as links, never
// followed), and nothing else; they go through os.Root, so nothing lands
// outside dir. The tmpfs's pages are memory, counted by the memory cgroup of
// whoever writes them. An agent that is not root cannot mount: it gets a
// Quota that is not Enforced.
func Limit(dir string, size int64) (*Quota, error) { return limit(dir, size, false) }

// LimitScratch is Limit for a scratch workspace: an empty directory that
// its caller removes after the run without reading it. The tmpfs bounds the
// run as Limit's does, but nothing is copied into it (there is nothing), and
// Close only unmounts it, which discards what the tool wrote: dir is left as
// it was, empty. A run of the same workspace meanwhile joins only a mount of
// its own kind (a scratch run another scratch run's), and is refused
// otherwise, so that no run that keeps its writes loses them.
func LimitScratch(dir string, size int64) (*Quota, error) { return limit(dir, size, true) }

func limit(dir string, size int64, scratch bool) (*Quota, error) {
	if os.Geteuid() != 0 || size <= 0 {
		return &Quota{dir: dir}, nil
	}
	dir, err := resolve(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	m, first := claim(dir)
	if !first {
		// Another run of the same workspace is going on: this one works in
		// that run's tmpfs, bounded by it, once it is mounted, and leaves
		// the hand-back to it; if that mount failed, this run is refused
		// rather than left on the unbounded directory.
		<-m.ready
		if m.err != nil {
			return nil, m.err
		}
		q := &Quota{dir: dir, size: m.owner.size, scratch: scratch, shared: m}
		if scratch != m.owner.scratch {
			q.Close()
			return nil, errors.New("workspace: in use by a run that keeps (or discards) its writes where this one does not")
		}
		if size < m.owner.size {
			// That run's tmpfs would bound this one more loosely than
			// asked: refused, not widened.
			q.Close()
			return nil, fmt.Errorf("workspace: in use by a run with a larger disk limit (%d bytes, %d asked)", m.owner.size, size)
		}
		return q, nil
	}
	q, err := mount(dir, size, scratch)
	if err != nil {
		m.err = err
		unclaim(dir)
	} else {
		q.shared, m.owner = m, q
	}
	close(m.ready)
	return q, err
}

// mount puts the tmpfs on dir and, unless scratch, copies dir's contents
// into it.
func mount(dir string, size int64, scratch bool) (*Quota, error) {
	// The mount is made in the mount namespace of the calling thread, which
	// a thread of this process that left for a namespace of its own (a
	// tool's start does) would not share: one thread throughout.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	// The directory is named by its descriptor from here on: a path
	// changed meanwhile (a symbolic link put in its place) moves nothing.
	at := "/proc/thread-self/fd/" + strconv.Itoa(fd)
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%o,uid=%d,gid=%d", size, max(size/4096, 64), st.Mode&0o777, st.Uid, st.Gid)
	var old *os.Root // what is copied in, unless scratch
	if !scratch {
		if old, err = os.OpenRoot(at); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
	}
	if err := unix.Mount(source, at, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		if old != nil {
			old.Close()
		}
		return nil, fmt.Errorf("workspace: mount a tmpfs of %d bytes: %w", size, err)
	}
	q := &Quota{dir: dir, size: size, scratch: scratch, old: old}
	if scratch {
		return q, nil
	}
	tmp, err := os.OpenRoot(dir)
	if err == nil {
		err = copyTree(old, tmp, newBudget(size), rules{owners: true})
		tmp.Close()
	}
	if err != nil {
		unmount(dir)
		old.Close()
		return nil, fmt.Errorf("workspace: copy its contents into the tmpfs: %w", err)
	}
	return q, nil
}

// Close ends the run's use of the workspace once its tool is dead; the last
// run working in it hands it back: dir's contents are replaced by the
// tmpfs's, at most size bytes of files (ErrDiskLimit beyond: a sparse file
// takes no room in a tmpfs and its whole length on a disk), with no setuid
// or setgid bit, and the tmpfs is unmounted, freeing it. Later calls return
// the first one's error.
func (q *Quota) Close() error {
	if !q.Enforced() {
		return nil
	}
	q.once.Do(func() { q.closed = q.leave() })
	return q.closed
}

// leave ends q's use of the shared mount, handing it back if q is the last.
func (q *Quota) leave() error {
	m := q.shared
	mounted.Lock()
	m.users--
	last := m.users == 0
	if last {
		m.closing = true
	}
	mounted.Unlock()
	if !last {
		return nil
	}
	err := m.owner.handBack()
	q.discarded = err == nil && q.scratch
	mounted.Lock()
	if mounted.dirs[q.dir] == m {
		delete(mounted.dirs, q.dir)
	}
	mounted.Unlock()
	close(m.done)
	return err
}

// HandBack stops the watch (stop, from Watch) and closes q; full says
// whether the tool filled the workspace, or left more in it than fits.
func (q *Quota) HandBack(stop func() bool) (full bool, err error) {
	full = stop()
	err = q.Close()
	if errors.Is(err, ErrDiskLimit) {
		return true, nil
	}
	return full, err
}

func (q *Quota) handBack() error {
	if q.scratch {
		if err := unmount(q.dir); err != nil {
			return fmt.Errorf("workspace: unmount its tmpfs: %w", err)
		}
		return nil
	}
	defer q.old.Close()
	tmp, err := os.OpenRoot(q.dir)
	if err == nil {
		err = clear(q.old)
		if err == nil {
			err = copyTree(tmp, q.old, newBudget(q.size), rules{owners: true})
		}
		tmp.Close()
	}
	if uerr := unmount(q.dir); uerr != nil && err == nil {
		err = fmt.Errorf("workspace: unmount its tmpfs: %w", uerr)
	}
	return err
}

// clear removes everything in r.
func clear(r *os.Root) error {
	f, err := r.Open(".")
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		if rerr := r.RemoveAll(n); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// Full reports whether the tmpfs has no room left.
func (q *Quota) Full() bool {
	if !q.Enforced() {
		return false
	}
	var s unix.Statfs_t
	return unix.Statfs(q.dir, &s) == nil && s.Bavail == 0
}

// Watch returns a context that is cancelled, as ctx is, and also as soon as
// the workspace is full, and a function that stops watching and reports
// whether it filled; call it at least once (more is harmless).
func (q *Quota) Watch(ctx context.Context) (context.Context, func() bool) {
	if !q.Enforced() {
		return ctx, func() bool { return false }
	}
	return watch(ctx, q.Full)
}

// Release unmounts the tmpfs Limit put on dir, if there is one (a run cut
// short by a crash left it), freeing everything in it; what dir held
// before Limit is back. It is safe to call on any directory.
func Release(dir string) error {
	runtime.LockOSThread() // mountinfo and unmount of one thread
	defer runtime.UnlockOSThread()
	dir, err := resolve(dir)
	if err != nil {
		return err
	}
	defer unclaim(dir)
	for {
		ours, err := isOurs(dir)
		if err != nil || !ours {
			return err
		}
		if err := unmount(dir); err != nil {
			return fmt.Errorf("workspace: unmount its tmpfs: %w", err)
		}
	}
}

// openDir opens dir, absolute and free of symbolic links (resolve), as a
// descriptor of the directory itself: O_NOFOLLOW refuses a symbolic link
// in its last component, and the path the descriptor reached, read back,
// must be dir, which refuses one in any other (put there after resolve).
func openDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return -1, fmt.Errorf("workspace: %s is not a directory", dir)
		}
		return -1, fmt.Errorf("workspace: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	got, err := os.Readlink("/proc/thread-self/fd/" + strconv.Itoa(fd))
	if err != nil || got != dir {
		unix.Close(fd)
		return -1, fmt.Errorf("workspace: %s moved while it was opened", dir)
	}
	return fd, nil
}

// unmount detaches the topmost mount on dir, not following a symbolic
// link in its last component.
func unmount(dir string) error {
	return unix.Unmount(dir, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
}

// resolve is dir as mountinfo spells it: absolute, no symbolic links.
func resolve(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

// isOurs reports whether the topmost mount on dir is a tmpfs of Limit's.
func isOurs(dir string) (bool, error) {
	// The calling thread's mounts, which its mount and unmount calls act
	// on: /proc/self is the main thread's, and a thread of this process
	// may have left for a namespace of its own (a tool's start does).
	f, err := os.Open("/proc/thread-self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("workspace: %w", err)
	}
	defer f.Close()
	ours := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 2 {
			continue
		}
		if unescape(fields[4]) == dir {
			// Later lines are mounts made later: the last one on dir is on top.
			ours = tail[0] == "tmpfs" && tail[1] == source
		}
	}
	return ours, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space, ...).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
