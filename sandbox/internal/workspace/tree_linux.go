package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// budget bounds one copy of a workspace: bytes of file data (a file's
// length, sparse or not) and entries (of any kind, left out or not), one
// per 4 KiB of the limit and at least 64, the inodes of a root agent's
// tmpfs of that size. Past either the copy stops with ErrDiskLimit.
type budget struct {
	bytes, entries int64
}

func newBudget(size int64) *budget {
	return &budget{bytes: size, entries: max(size/4096, 64)}
}

// rules say how a copy treats what it copies.
type rules struct {
	// owners keeps each entry's owner and group (a root agent's copies);
	// otherwise everything copied belongs to the agent.
	owners bool
	// unlock lets the agent read a source that is its own but whose modes
	// a tool took away (a file 0000, a directory 0300): the owner gets read,
	// and search on directories, before the entry is read. Only for a
	// source that is thrown away after the copy (a sandbox's tmpfs).
	unlock bool
}

// copyTree copies the tree of src into dst: regular files, directories and
// symbolic links (as links, never followed), within b (ErrDiskLimit past
// it), setuid and setgid bits dropped; anything else (devices, FIFOs,
// sockets) is left out. A file is opened without following a link and
// without blocking, and copied only if the open file is a regular one; a
// file linked under several names is copied under each, each counted.
func copyTree(src, dst *os.Root, b *budget, r rules) error {
	if r.unlock {
		if err := inodesWithin(src, b.entries); err != nil {
			return err
		}
		if err := unlock(src, ".", 0o700); err != nil {
			return err
		}
	}
	// A directory gets its mode once its entries are in: one without write
	// permission would refuse them. Deepest first, so that a parent that
	// forbids search is set after its children.
	var dirs []string
	var modes []fs.FileMode
	err := fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return vanished(err)
		}
		fi, err := src.Lstat(p)
		if err != nil {
			return vanished(err)
		}
		// Every entry counts, the ones left out too: a tool's FIFOs and
		// sockets cost the walk as much as its files.
		if b.entries--; b.entries < 0 {
			return fmt.Errorf("%w: too many entries", ErrDiskLimit)
		}
		switch {
		case fi.IsDir():
			if r.unlock && fi.Mode().Perm()&0o500 != 0o500 {
				// WalkDir reads it after this returns.
				err = unlock(src, p, 0o500)
			}
			if err == nil {
				err = dst.Mkdir(p, 0o700)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			if target, err = src.Readlink(p); err == nil {
				err = dst.Symlink(target, p)
			}
		case fi.Mode().IsRegular():
			if r.unlock && fi.Mode().Perm()&0o400 == 0 {
				err = unlock(src, p, 0o400)
			}
			if err == nil {
				err = copyFile(src, dst, p, fi.Mode().Perm(), b)
			}
		default:
			return nil
		}
		if errors.Is(err, errLeftOut) {
			return nil
		}
		if err != nil && changed(src, p, fi) {
			// The entry changed kind since it was looked at (a link read
			// that is a file now, a file opened without following that is
			// a link now): like a vanished one, the copy leaves it out.
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			// Written meanwhile by someone else (not the tool: it is not
			// running during a copy); the newer entry stays.
			return nil
		}
		if err == nil && r.owners {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				err = dst.Lchown(p, int(st.Uid), int(st.Gid))
			}
		}
		if err == nil && fi.IsDir() {
			dirs, modes = append(dirs, p), append(modes, fi.Mode().Perm())
		}
		return vanished(err)
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = vanished(chmodDir(dst, dirs[i], modes[i]))
	}
	return err
}

// inodesWithin refuses a tmpfs source that holds more inodes than the copy
// may take entries, before the walk: the walk reads a directory's whole
// listing before it counts its entries, and a tool's million FIFOs in one
// directory must not cost the agent their listing. Any other file system
// (nothing to count with statfs) is left to the walk's own count.
func inodesWithin(src *os.Root, entries int64) error {
	f, err := src.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Type != unix.TMPFS_MAGIC || st.Files == 0 {
		return nil
	}
	// The root directory is an inode of its own.
	if used := int64(st.Files-st.Ffree) - 1; used > entries {
		return fmt.Errorf("%w: %d entries", ErrDiskLimit, used)
	}
	return nil
}

// errLeftOut is an entry that is not what it was when looked at: the copy
// leaves it out.
var errLeftOut = errors.New("workspace: entry changed")

// unlock adds the owner bits want to the mode of p in r, a directory or a
// regular file, through a descriptor opened without following a link.
func unlock(r *os.Root, p string, want fs.FileMode) error {
	f, err := r.OpenFile(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	// fchmod does not take an O_PATH descriptor; its /proc/self/fd link
	// names exactly the file opened.
	return os.Chmod(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), fs.FileMode(st.Mode&0o777)|want)
}

// changed reports whether the entry p of src is gone or no longer of the
// kind fi says it was.
func changed(src *os.Root, p string, fi fs.FileInfo) bool {
	now, err := src.Lstat(p)
	return err != nil || now.Mode().Type() != fi.Mode().Type()
}

// vanished forgives an entry that went away during a copy: the workspace's
// owner (or another run of it) may change it while a run starts or ends,
// and an entry removed meanwhile is one the copy need not carry.
func vanished(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func copyFile(src, dst *os.Root, p string, perm fs.FileMode, b *budget) error {
	// O_NONBLOCK: a FIFO put in the file's place would otherwise hold the
	// open until a writer came.
	in, err := src.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return errLeftOut
	}
	out, err := dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	n, err := io.CopyN(out, in, b.bytes+1)
	b.bytes -= n
	if err == io.EOF {
		err = nil
	}
	if err == nil && b.bytes < 0 {
		// CopyN went one byte past, to see that there was more: keep
		// only what fits.
		err = ErrDiskLimit
		if terr := out.Truncate(n + b.bytes); terr != nil {
			err = terr
		}
	}
	if errors.Is(err, unix.ENOSPC) {
		err = fmt.Errorf("%w: %w", ErrDiskLimit, err)
	}
	if err == nil {
		// On the open file, not by name: the name may be a link by now.
		err = out.Chmod(perm) // not the umask's
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// chmodDir sets a copied directory's mode through a descriptor opened
// without following a link, so that an entry swapped for a link meanwhile
// changes nothing and the copy leaves it out.
func chmodDir(dst *os.Root, p string, perm fs.FileMode) error {
	f, err := dst.OpenFile(p, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil
		}
		return err
	}
	defer f.Close()
	return f.Chmod(perm) // not the umask's
}
