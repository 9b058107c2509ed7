// Package secretfile writes and checks files that hold secrets (keys,
// tokens, configurations with credentials): written whole or not at all,
// never through a symbolic link, mode 0600, owned by the writer; and
// refused when others can read them, as ssh refuses a private key.
package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Mode is the mode of every secret file.
const Mode fs.FileMode = 0o600

// ErrTooOpen is wrapped by Check's error for a file others can read.
var ErrTooOpen = errors.New("secretfile: readable by group or others")

// Write replaces path with data, mode 0600. The data goes to a new file in
// path's directory (created with O_EXCL and O_NOFOLLOW, owned by the
// caller, mode set exactly whatever the umask), is synced, and is renamed
// over path: a reader sees the old file or the new one, never half of one;
// a symbolic link at path is replaced, never followed, so the write cannot
// be redirected to another file; and a file that was group- or
// world-readable is not reused with its mode.
func Write(path string, data []byte) error { return WriteMode(path, data, Mode) }

// Create is Write for a file that must not exist yet: it fails with an
// error wrapping fs.ErrExist when path exists, even as a dangling symbolic
// link, and otherwise writes exactly as Write does.
func Create(path string, data []byte) error { return CreateMode(path, data, Mode) }

// WriteMode is Write with another mode, for the public files written
// beside secret ones (certificates, service definitions), which want the
// same whole-or-nothing write.
func WriteMode(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, true)
}

// CreateMode is Create with another mode.
func CreateMode(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm fs.FileMode, replace bool) error {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // gone after the rename or link; removes what a failure left
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(name, path)
	} else {
		// A hard link never replaces what is at path (a file, a directory
		// or a symbolic link): creation without a window where path holds
		// part of the data.
		err = os.Link(name, path)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists: %w", path, fs.ErrExist)
		}
	}
	if err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// createTemp creates a new file in dir that did not exist, not following a
// symbolic link at its name.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+randomSuffix())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("secretfile: no free temporary name in %s", dir)
}

// syncDir makes the rename durable where the platform allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Check refuses a secret file that group or others can read or write, or
// that another user than this one or root owns, as ssh refuses such a
// private key: the error names the file, its mode or owner, and the fix. A missing file is the caller's own error (fs.ErrNotExist).
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: permissions %04o for %s are too open: it holds secrets; run chmod 600 %s", ErrTooOpen, fi.Mode().Perm(), path, path)
	}
	// Owned by this user or by root, as ssh asks: another user could
	// rewrite a file of theirs whatever its mode.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d) or root: it holds secrets; run chown %d %s", ErrTooOpen, path, st.Uid, os.Geteuid(), os.Geteuid(), path)
	}
	return nil
}
