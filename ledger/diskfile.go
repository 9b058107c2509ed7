package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// headMagic starts the head file, which records the committed size of a disk
// store. Files may be longer than the head says (an append that did not
// finish, or was not synced) but never shorter. The size has a fixed width so
// that the head is rewritten in place, in one write well inside one disk
// sector, on every append (with DeferSync, on every Sync).
const (
	headMagic     = "writ-ledger-head v1"
	headSizeWidth = 19 // digits of the largest int64
)

// writeFileAtomic replaces dir/name with data so that a crash leaves either the
// old or the new contents: write a temporary file, sync it, rename it over the
// old one, and sync the directory.
func writeFileAtomic(dir, name string, data []byte, sync bool) error {
	tmp, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func formatHead(size int64) []byte {
	return []byte(fmt.Sprintf("%s\n%0*d\n", headMagic, headSizeWidth, size))
}

// parseHead reads the committed size from the head file's contents.
func parseHead(data []byte) (int64, error) {
	lines := strings.Split(string(data), "\n")
	if len(lines) != 3 || lines[0] != headMagic || lines[2] != "" {
		return 0, fmt.Errorf("%w: head file is not a %s file", ErrCorrupt, headMagic)
	}
	digits := lines[1]
	size, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || len(digits) != headSizeWidth || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%w: head file size %q is not %d decimal digits", ErrCorrupt, digits, headSizeWidth)
	}
	return size, nil
}

// checkLength compares a file's length with what the committed size needs.
// Shorter is a truncation. Longer is the tail of an append that did not finish,
// or of appends made with DeferSync after the last Sync (or a head that was
// rolled back): it is left in place, so that nothing is destroyed before the
// Log has compared the store with its checkpoint, and cut back by the next
// Append.
func (s *DiskStore) checkLength(f *os.File, want int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	name := filepath.Base(f.Name())
	switch got := fi.Size(); {
	case got < want:
		return fmt.Errorf("%w: %s is %d bytes, but the store's committed size of %d leaves needs %d",
			ErrTruncated, name, got, s.size.Load(), want)
	case got > want:
		s.cfg.logger().Warn("ledger: ignoring data past the committed end (appends not finished or not synced)",
			"file", name, "bytes", got, "committed", want)
		s.excess = true
	}
	return nil
}

// cutExcess truncates every file to its committed length. Called with mu held
// before the first append after an open that found excess data.
func (s *DiskStore) cutExcess() error {
	size := s.size.Load()
	for _, c := range []struct {
		f   *os.File
		end int64
	}{{s.leaves, s.dataEnd.Load()}, {s.index, size * indexEntrySize}, {s.hashes, tlog.StoredHashCount(size) * HashSize}} {
		if err := c.f.Truncate(c.end); err != nil {
			return err
		}
	}
	s.excess = false
	return nil
}
