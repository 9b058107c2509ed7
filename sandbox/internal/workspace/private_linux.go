package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Private is a workspace bounded, for one run, by a size-limited tmpfs that
// is mounted nowhere on the host: a detached mount (fsopen, fsmount) that
// the tier places on the workspace's path in the tool's own mount
// namespace (MountFD). The agent copies the workspace in through a
// descriptor of its root before the run, and back out after it, when
// nothing of the tool runs any more; the tmpfs goes away with the tool's
// namespace and that descriptor. Unlike Quota, nothing is mounted or
// unmounted on the host: no mount table to read, no unmount's wait on the
// run's path, nothing left mounted by a crash. Only a root agent can make
// one, for a tier that gives the tool a mount namespace of its own.
type Private struct {
	dir  string
	size int64

	mnt    *os.File                // the detached mount, until the tier places it
	tmp    atomic.Pointer[os.File] // the tmpfs's root, until Close
	once   sync.Once
	closed error
}

// NewPrivate makes the tmpfs of dir, size bytes and one inode per 4 KiB
// (at least 64), nosuid and nodev, its root owned by uid and gid with dir's
// mode (and at least 0700), and copies dir into it as Limit does (owners
// kept, ErrDiskLimit past size).
func NewPrivate(dir string, size int64, uid, gid int) (*Private, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("workspace: a tmpfs of %d bytes: %w", size, err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{
		{"source", source},
		{"size", strconv.FormatInt(size, 10)},
		{"nr_inodes", strconv.FormatInt(max(size/4096, 64), 10)},
		{"mode", strconv.FormatUint(uint64(st.Mode&0o777|0o700), 8)},
		{"uid", strconv.Itoa(uid)},
		{"gid", strconv.Itoa(gid)},
	} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("workspace: a tmpfs of %d bytes: %s=%s: %w", size, kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("workspace: a tmpfs of %d bytes: %w", size, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("workspace: a tmpfs of %d bytes: %w", size, err)
	}
	p := &Private{dir: dir, size: size, mnt: os.NewFile(uintptr(mfd), "tmpfs-mount")}
	rfd, err := unix.Openat(mfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.mnt.Close()
		return nil, fmt.Errorf("workspace: open the tmpfs: %w", err)
	}
	tmp := os.NewFile(uintptr(rfd), "tmpfs")
	if err := p.fill(tmp); err != nil {
		tmp.Close()
		p.mnt.Close()
		return nil, err
	}
	p.tmp.Store(tmp)
	return p, nil
}

func (p *Private) fill(tmp *os.File) error {
	dst, err := rootOf(tmp)
	if err != nil {
		return err
	}
	defer dst.Close()
	src, err := os.OpenRoot(p.dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer src.Close()
	if err := copyTree(src, dst, newBudget(p.size), rules{owners: true}); err != nil {
		return fmt.Errorf("workspace: copy its contents into the tmpfs: %w", err)
	}
	return nil
}

// MountFD is the detached mount of the tmpfs, for the tier to move onto
// the workspace's path in the tool's mount namespace (move_mount). It stays
// open until Close.
func (p *Private) MountFD() *os.File { return p.mnt }

// Full reports whether the tmpfs has no room left.
func (p *Private) Full() bool {
	tmp := p.tmp.Load()
	if tmp == nil {
		return false
	}
	var s unix.Statfs_t
	return unix.Fstatfs(int(tmp.Fd()), &s) == nil && s.Bavail == 0
}

// Watch is Quota.Watch for the private tmpfs.
func (p *Private) Watch(ctx context.Context) (context.Context, func() bool) {
	return watch(ctx, p.Full)
}

// HandBack stops the watch (stop, from Watch) and closes p; full says
// whether the tool filled the workspace, or left more in it than fits.
func (p *Private) HandBack(stop func() bool) (full bool, err error) {
	full = stop()
	err = p.Close()
	if errors.Is(err, ErrDiskLimit) {
		return true, nil
	}
	return full, err
}

// Close hands the workspace back once every process of the tool is dead, as
// Quota.Close does: dir's contents are replaced by the tmpfs's (owners kept,
// no setuid or setgid bit, at most size bytes and one entry per 4 KiB), and
// the descriptors are closed, which frees the tmpfs once the tool's
// namespace is gone. Later calls return the first one's error.
func (p *Private) Close() error {
	p.once.Do(func() {
		defer p.mnt.Close()
		tmp := p.tmp.Load()
		p.closed = p.handBack(tmp)
		p.tmp.Store(nil) // Full is false from now on
		tmp.Close()
	})
	return p.closed
}

func (p *Private) handBack(tmp *os.File) error {
	src, err := rootOf(tmp)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(p.dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer dst.Close()
	if err := clear(dst); err != nil {
		return fmt.Errorf("workspace: empty it for the hand-back: %w", err)
	}
	return copyTree(src, dst, newBudget(p.size), rules{owners: true})
}
