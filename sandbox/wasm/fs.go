package wasm

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// confinedFS is the workspace as a guest sees it. wazero's directory file
// system resolves guest paths on the host, so a symlink in the workspace
// — planted by the guest, or left by an earlier tool — would be followed
// to anywhere on the host, and ".." is not refused either. confinedFS
// refuses to create symlinks, refuses paths that climb out, and refuses
// to go through any symlink on the way.
//
// The check walks the path with lstat before wazero opens it. Between the
// two, only something else writing the same workspace could swap a
// directory for a link; the agent gives each invocation its own.
type confinedFS struct {
	experimentalsys.FS
	root string
}

// newConfinedFS is root confined; with q, every byte and entry the guest
// adds or removes is counted in q too.
func newConfinedFS(root string, q *diskQuota) *confinedFS {
	inner := sysfs.DirFS(root)
	if q != nil {
		inner = &quotaFS{FS: inner, q: q}
	}
	return &confinedFS{FS: inner, root: root}
}

// check fails when path leaves the root or passes through a symlink; the
// last element counts only when the operation follows it.
func (c *confinedFS) check(path string, followLast bool) experimentalsys.Errno {
	if strings.ContainsRune(path, 0) || strings.HasPrefix(filepath.Clean(path), "..") {
		return experimentalsys.EPERM
	}
	clean := filepath.Clean("/" + path)
	parts := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	host := c.root
	for i, p := range parts {
		if p == "" {
			continue
		}
		host = filepath.Join(host, p)
		if i == len(parts)-1 && !followLast {
			break
		}
		st, err := os.Lstat(host)
		if err != nil {
			return 0 // does not exist (yet): the operation reports it
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			return experimentalsys.ELOOP
		}
	}
	return 0
}

func (c *confinedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if e := c.check(path, flag&experimentalsys.O_NOFOLLOW == 0); e != 0 {
		return nil, e
	}
	return c.FS.OpenFile(path, flag|experimentalsys.O_NOFOLLOW, perm)
}

func (c *confinedFS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(path, false); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Lstat(path)
}

func (c *confinedFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	if e := c.check(path, true); e != 0 {
		return sys.Stat_t{}, e
	}
	return c.FS.Stat(path)
}

func (c *confinedFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	return c.then(c.check(path, false), func() experimentalsys.Errno { return c.FS.Mkdir(path, perm) })
}

func (c *confinedFS) Chmod(path string, perm fs.FileMode) experimentalsys.Errno {
	return c.then(c.check(path, true), func() experimentalsys.Errno { return c.FS.Chmod(path, perm) })
}

func (c *confinedFS) Rename(from, to string) experimentalsys.Errno {
	return c.then(c.check(from, false)|c.check(to, false), func() experimentalsys.Errno { return c.FS.Rename(from, to) })
}

func (c *confinedFS) Rmdir(path string) experimentalsys.Errno {
	return c.then(c.check(path, false), func() experimentalsys.Errno { return c.FS.Rmdir(path) })
}

func (c *confinedFS) Unlink(path string) experimentalsys.Errno {
	return c.then(c.check(path, false), func() experimentalsys.Errno { return c.FS.Unlink(path) })
}

func (c *confinedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return c.then(c.check(oldPath, false)|c.check(newPath, false), func() experimentalsys.Errno { return c.FS.Link(oldPath, newPath) })
}

// Symlink is refused: a link is only ever a way out.
func (c *confinedFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

func (c *confinedFS) Readlink(path string) (string, experimentalsys.Errno) {
	if e := c.check(path, false); e != 0 {
		return "", e
	}
	return c.FS.Readlink(path)
}

func (c *confinedFS) Utimens(path string, atim, mtim int64) experimentalsys.Errno {
	return c.then(c.check(path, true), func() experimentalsys.Errno { return c.FS.Utimens(path, atim, mtim) })
}

func (c *confinedFS) then(e experimentalsys.Errno, op func() experimentalsys.Errno) experimentalsys.Errno {
	if e != 0 {
		return e
	}
	return op()
}
