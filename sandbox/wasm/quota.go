package wasm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// entryBytes is what every file and directory counts for besides its bytes,
// so that a guest cannot fill the host's inode table with empty files: a
// limit allows as many entries as a tmpfs of its size (1 inode per 4 KiB).
const entryBytes = 4096

// errDiskLimit is what the guest gets for a change past the limit; WASI
// preview 1 as wazero serves it has no ENOSPC, and the run ends anyway.
const errDiskLimit = experimentalsys.EIO

// ErrWorkspaceFull means the workspace already held more than
// limits.disk_bytes before the run; nothing ran.
var ErrWorkspaceFull = errors.New("wasm: the workspace holds more than limits.disk_bytes")

// diskQuota counts what a guest keeps in its workspace — the length of
// every regular file, sparse or not, plus entryBytes per file and directory
// — and refuses a change that would take it past the limit. The first
// refusal calls onFull, which ends the run: exceeding limits.disk_bytes
// ends it with status disk_limit in every tier. It does not depend on the
// agent's privileges (a tmpfs needs root), so the wasm tier enforces the
// limit for any agent.
type diskQuota struct {
	limit  int64
	onFull func()

	mu   sync.Mutex
	used int64
	full bool
}

// newDiskQuota counts what dir holds now (a file with several names once).
func newDiskQuota(dir string, limit int64, onFull func()) (*diskQuota, error) {
	q := &diskQuota{limit: limit, onFull: onFull}
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			return err
		}
		if errors.Is(err, fs.ErrNotExist) {
			// Gone since its directory was read (the host changing the
			// workspace meanwhile): nothing to count.
			return nil
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		q.used += entryBytes
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() {
			id := [2]uint64{uint64(st.Dev), st.Ino}
			if !seen[id] {
				seen[id] = true
				q.used += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wasm: count the workspace: %w", err)
	}
	if q.used > limit {
		return nil, fmt.Errorf("%w (%d bytes, limit %d)", ErrWorkspaceFull, q.used, limit)
	}
	return q, nil
}

// emptyDiskQuota counts from nothing: a workspace known to be empty.
func emptyDiskQuota(limit int64, onFull func()) *diskQuota {
	return &diskQuota{limit: limit, onFull: onFull}
}

// Full reports whether a change was refused.
func (q *diskQuota) Full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.full
}

// grow takes n more bytes (n may be negative: space given back), or
// refuses when that would pass the limit.
func (q *diskQuota) grow(n int64) experimentalsys.Errno {
	q.mu.Lock()
	if n > 0 && q.used+n > q.limit {
		first := !q.full
		q.full = true
		q.mu.Unlock()
		if first && q.onFull != nil {
			q.onFull()
		}
		return errDiskLimit
	}
	q.used = max(q.used+n, 0)
	q.mu.Unlock()
	return 0
}

// quotaFS is fs with every change that adds or removes bytes or entries
// counted in q.
type quotaFS struct {
	experimentalsys.FS
	q *diskQuota
}

// lstat is what path holds now: whether it exists, and the bytes that
// removing its name would give back (its length when it is a regular file
// with no other name).
func (f *quotaFS) lstat(path string) (exists bool, freed int64) {
	st, e := f.FS.Lstat(path)
	if e != 0 {
		return false, 0
	}
	freed = entryBytes
	if fs.FileMode(st.Mode).IsRegular() && st.Nlink <= 1 {
		freed += st.Size
	}
	return true, freed
}

func (f *quotaFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	writes := flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0
	if flag&experimentalsys.O_CREAT == 0 && !writes {
		return f.FS.OpenFile(path, flag, perm)
	}
	var size int64
	st, e := f.FS.Lstat(path)
	exists := e == 0
	if exists {
		size = st.Size
	}
	if !exists && flag&experimentalsys.O_CREAT != 0 {
		if e := f.q.grow(entryBytes); e != 0 {
			return nil, e
		}
	}
	file, e := f.FS.OpenFile(path, flag, perm)
	switch {
	case e != 0 && !exists && flag&experimentalsys.O_CREAT != 0:
		f.q.grow(-entryBytes)
	case e == 0 && exists && flag&experimentalsys.O_TRUNC != 0 && fs.FileMode(st.Mode).IsRegular():
		f.q.grow(-size)
	}
	if e != 0 {
		return nil, e
	}
	if !writes {
		return file, 0
	}
	return &quotaFile{File: file, q: f.q}, 0
}

func (f *quotaFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if e := f.q.grow(entryBytes); e != 0 {
		return e
	}
	e := f.FS.Mkdir(path, perm)
	if e != 0 {
		f.q.grow(-entryBytes)
	}
	return e
}

func (f *quotaFS) Link(oldPath, newPath string) experimentalsys.Errno {
	if e := f.q.grow(entryBytes); e != 0 {
		return e
	}
	e := f.FS.Link(oldPath, newPath)
	if e != 0 {
		f.q.grow(-entryBytes)
	}
	return e
}

func (f *quotaFS) Rename(from, to string) experimentalsys.Errno {
	exists, freed := f.lstat(to)
	a, _ := f.FS.Lstat(from)
	b, _ := f.FS.Lstat(to)
	e := f.FS.Rename(from, to)
	if e == 0 && exists && !(a.Dev == b.Dev && a.Ino == b.Ino) {
		f.q.grow(-freed)
	}
	return e
}

func (f *quotaFS) Unlink(path string) experimentalsys.Errno {
	_, freed := f.lstat(path)
	e := f.FS.Unlink(path)
	if e == 0 {
		f.q.grow(-freed)
	}
	return e
}

func (f *quotaFS) Rmdir(path string) experimentalsys.Errno {
	e := f.FS.Rmdir(path)
	if e == 0 {
		f.q.grow(-entryBytes)
	}
	return e
}

// quotaFile counts how a file open for writing grows or shrinks.
type quotaFile struct {
	experimentalsys.File
	q *diskQuota
}

func (f *quotaFile) Write(buf []byte) (int, experimentalsys.Errno) {
	var end int64
	if f.File.IsAppend() {
		st, e := f.File.Stat()
		if e != 0 {
			return 0, e
		}
		end = st.Size + int64(len(buf))
	} else {
		off, e := f.File.Seek(0, io.SeekCurrent)
		if e != 0 {
			return 0, e
		}
		end = off + int64(len(buf))
	}
	return f.write(end, func() (int, experimentalsys.Errno) { return f.File.Write(buf) })
}

func (f *quotaFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	return f.write(off+int64(len(buf)), func() (int, experimentalsys.Errno) { return f.File.Pwrite(buf, off) })
}

// write reserves the growth to end, writes, and gives back what a short
// or failed write did not use.
func (f *quotaFile) write(end int64, op func() (int, experimentalsys.Errno)) (int, experimentalsys.Errno) {
	before, e := f.File.Stat()
	if e != 0 {
		return 0, e
	}
	growth := max(end-before.Size, 0)
	if growth > 0 {
		if e := f.q.grow(growth); e != 0 {
			return 0, e
		}
	}
	n, e := op()
	if growth > 0 {
		if after, serr := f.File.Stat(); serr == 0 {
			if unused := growth - max(after.Size-before.Size, 0); unused > 0 {
				f.q.grow(-unused)
			}
		}
	}
	return n, e
}

func (f *quotaFile) Truncate(size int64) experimentalsys.Errno {
	st, e := f.File.Stat()
	if e != 0 {
		return e
	}
	if size > st.Size {
		if e := f.q.grow(size - st.Size); e != 0 {
			return e
		}
		if e := f.File.Truncate(size); e != 0 {
			f.q.grow(st.Size - size)
			return e
		}
		return 0
	}
	if e := f.File.Truncate(size); e != 0 {
		return e
	}
	f.q.grow(size - st.Size)
	return 0
}
