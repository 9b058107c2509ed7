package runc

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// unpacker applies image layers to a root directory. Every path is
// resolved with openat2(RESOLVE_IN_ROOT), so neither "..", an absolute
// name nor a symlink planted by an earlier entry can reach outside it.
type unpacker struct {
	root   *os.File
	budget int64 // bytes still allowed
}

func newUnpacker(root string, maxBytes int64) (*unpacker, error) {
	f, err := os.OpenFile(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &unpacker{root: f, budget: maxBytes}, nil
}

func (u *unpacker) Close() error { return u.root.Close() }

// dir opens (creating as needed) the directory rel inside the root.
// Each lookup starts from the root, so a relative symlink resolves as it
// will in the container.
func (u *unpacker) dir(rel string) (int, error) {
	rel = strings.Trim(rel, "/")
	open := func() (int, error) {
		p := rel
		if p == "" {
			p = "."
		}
		return unix.Openat2(int(u.root.Fd()), p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	}
	fd, err := open()
	if err != unix.ENOENT || rel == "" {
		return fd, err
	}
	parent, base := path.Split(rel)
	pfd, err := u.dir(parent)
	if err != nil {
		return -1, err
	}
	err = unix.Mkdirat(pfd, base, 0o755)
	unix.Close(pfd)
	if err != nil && err != unix.EEXIST {
		return -1, err
	}
	return open()
}

// apply extracts one layer (an uncompressed tar stream), honouring OCI
// whiteouts against what earlier layers left.
func (u *unpacker) apply(r io.Reader) error {
	tr := tar.NewReader(r)
	written := map[string]bool{} // paths this layer made: an opaque whiteout spares them
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: layer: %v", ErrImage, err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if name == "" {
			continue
		}
		parent, base := path.Split(name)
		if err := u.entry(hdr, tr, parent, base, written); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrImage, name, err)
		}
		written[name] = true
	}
}

func (u *unpacker) entry(hdr *tar.Header, tr io.Reader, parent, base string, written map[string]bool) error {
	pfd, err := u.dir(parent)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	proc := fmt.Sprintf("/proc/self/fd/%d/", pfd)
	if base == ".wh..wh..opq" {
		entries, _ := os.ReadDir(proc)
		for _, e := range entries {
			if !written[path.Join(parent, e.Name())] {
				os.RemoveAll(proc + e.Name())
			}
		}
		return nil
	}
	if gone, ok := strings.CutPrefix(base, ".wh."); ok {
		if gone == "" || gone == "." || gone == ".." {
			return errors.New("whiteout of no entry") // ".." would reach above the root
		}
		return os.RemoveAll(proc + gone)
	}
	mode := uint32(hdr.Mode) & 0o1777 // no setuid or setgid bits
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(pfd, base, mode); err != nil && err != unix.EEXIST {
			return err
		}
		return nil
	case tar.TypeReg:
		_ = unix.Unlinkat(pfd, base, 0)
		fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		if hdr.Size > u.budget {
			return errors.New("image larger than the configured maximum")
		}
		n, err := io.Copy(f, io.LimitReader(tr, hdr.Size))
		u.budget -= n
		if err != nil {
			return err
		}
		_ = f.Chown(hdr.Uid, hdr.Gid)
		return unix.Fchmod(fd, mode) // after chown, which clears setuid anyway
	case tar.TypeSymlink:
		_ = unix.Unlinkat(pfd, base, 0)
		if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
			return err
		}
		_ = unix.Fchownat(pfd, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW)
		return nil
	case tar.TypeLink:
		target := strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
		tfd, err := unix.Openat2(int(u.root.Fd()), target, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			return err
		}
		defer unix.Close(tfd)
		_ = unix.Unlinkat(pfd, base, 0)
		return unix.Linkat(tfd, "", pfd, base, unix.AT_EMPTY_PATH)
	}
	return nil // devices and fifos: the container has its own /dev
}
