// Package workspace hands a run's workspace directory to the tool's user
// and takes it back: HandOver gives it to the run-as user and returns it
// open, Reclaim clears the setuid and setgid bits a tool left on anything in
// it before the agent reads its files. It also bounds what a tool can write
// there (limits.disk_bytes) with a tmpfs the workspace is copied into and
// back out of: mounted on the workspace (Quota), mounted only in the tool's
// mount namespace (Private), or mounted by the sandbox itself (Mirror).
package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// HandOver gives the workspace directory to uid and gid and returns it open.
// The directory is opened before it is changed, so a path swapped meanwhile
// changes nothing else; it is made 0700 for its owner (at least), so that the
// run-as user can work in it whatever its mode was.
func HandOver(dir string, uid, gid uint32) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	var st syscall.Stat_t
	err = syscall.Fstat(int(f.Fd()), &st)
	if err == nil && (st.Uid != uid || st.Gid != gid) {
		err = f.Chown(int(uid), int(gid))
	}
	if err == nil && st.Mode&0o700 != 0o700 {
		err = f.Chmod(os.FileMode(st.Mode&0o777 | 0o700))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("workspace: give it to uid %d: %w", uid, err)
	}
	return f, nil
}

// Open returns the workspace directory open, for a tier that binds it by
// descriptor without changing its owner (an agent that is not root).
func Open(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return f, nil
}

// Reclaim clears the setuid and setgid bits of every regular file and
// directory below dir (dir included), so that nothing a tool left there can
// raise the privileges of whoever runs it later. Symbolic links are not
// followed. Call it once every process of the tool is dead: nothing then
// swaps an entry between the check and the change. It returns the first
// error, after trying every entry.
func Reclaim(dir string) error {
	var first error
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if first == nil && !os.IsNotExist(err) {
				first = err
			}
			return nil
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) == 0 || fi.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		if err := os.Chmod(p, fi.Mode()&^(fs.ModeSetuid|fs.ModeSetgid)); err != nil && first == nil {
			first = fmt.Errorf("workspace: clear setuid and setgid of %s: %w", p, err)
		}
		return nil
	})
	return first
}
