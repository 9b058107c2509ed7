package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/mod/sumdb/tlog"
)

// File names inside a DiskStore's directory; docs/ledger.md describes them.
const (
	leavesFile     = "leaves.dat" // leaf bytes, concatenated
	indexFile      = "leaves.idx" // 8-byte big-endian end offset of each leaf
	hashesFile     = "hashes.dat" // 32-byte hashes in tlog stored-hash order
	headFile       = "head"       // committed size, replaced atomically
	checkpointFile = "checkpoint" // latest signed checkpoint, replaced atomically
	lockFile       = "lock"       // flock'd while open
	indexEntrySize = 8
)

// DiskStore is a durable Store in a directory of append-only files. Memory use
// does not depend on the number of leaves: reads go to the files (and so to
// the kernel's page cache), and opening reads only the file lengths and the
// last index entry.
type DiskStore struct {
	cfg    DiskConfig
	lock   *os.File
	leaves *os.File
	index  *os.File
	hashes *os.File
	head   *os.File

	// syncMu serializes Sync, SetCheckpoint and Close; it is taken before mu
	// and held over fsyncs, which mu never is with DeferSync.
	syncMu sync.Mutex
	mu     sync.Mutex // serializes Append with the rest and guards what follows it
	// headSize is the size the head file holds, written or not yet synced.
	headSize int64
	// failed is the first error of an fsync: the kernel may have dropped
	// the pages it could not write, so a later fsync that succeeds would
	// prove nothing, and the store takes no more appends.
	failed  error
	excess  bool         // files hold data past the committed end
	size    atomic.Int64 // appended leaves; published after their data
	dataEnd atomic.Int64 // end of the appended leaf bytes; stored before size
	synced  atomic.Int64 // leaves known durable: data and head fsynced
	closed  atomic.Bool
}

var _ Store = (*DiskStore)(nil)

// OpenDisk opens the store in cfg.Dir, creating an empty one if the directory
// holds none. It fails with an error wrapping ErrTruncated if a file is shorter
// than the committed size needs, and with ErrCorrupt if the head is unreadable.
// Checking the contents against the hashes and checkpoint is the Log's job
// (see Open).
func OpenDisk(cfg DiskConfig) (*DiskStore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	s := &DiskStore{cfg: cfg}
	if err := s.open(); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("ledger: open %s: %w", cfg.Dir, err)
	}
	return s, nil
}

func (s *DiskStore) open() error {
	var err error
	path := func(name string) string { return filepath.Join(s.cfg.Dir, name) }
	if s.lock, err = os.OpenFile(path(lockFile), os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return err
	}
	if err := syscall.Flock(int(s.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("store is in use by another process: %w", err)
	}
	head, err := os.ReadFile(path(headFile))
	fresh := errors.Is(err, fs.ErrNotExist)
	if err != nil && !fresh {
		return err
	}
	for _, f := range []struct {
		name string
		dst  **os.File
	}{{leavesFile, &s.leaves}, {indexFile, &s.index}, {hashesFile, &s.hashes}} {
		flag := os.O_RDWR
		if fresh {
			flag |= os.O_CREATE
		}
		if *f.dst, err = os.OpenFile(path(f.name), flag, 0o600); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: %s is missing", ErrTruncated, f.name)
			}
			return err
		}
	}
	if fresh {
		if err := s.startFresh(); err != nil {
			return err
		}
		head = formatHead(0)
	}
	if s.head, err = os.OpenFile(path(headFile), os.O_RDWR, 0); err != nil {
		return err
	}
	size, err := parseHead(head)
	if err != nil {
		return err
	}
	s.size.Store(size)
	s.synced.Store(size)
	s.headSize = size
	if err := s.checkLength(s.index, size*indexEntrySize); err != nil {
		return err
	}
	if err := s.checkLength(s.hashes, tlog.StoredHashCount(size)*HashSize); err != nil {
		return err
	}
	if size > 0 {
		var b [indexEntrySize]byte
		if _, err := s.index.ReadAt(b[:], (size-1)*indexEntrySize); err != nil {
			return err
		}
		s.dataEnd.Store(int64(binary.BigEndian.Uint64(b[:])))
	}
	return s.checkLength(s.leaves, s.dataEnd.Load())
}

// startFresh makes a new store: there is no head, so there must be no data.
func (s *DiskStore) startFresh() error {
	for _, f := range []*os.File{s.leaves, s.index, s.hashes} {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Size() != 0 {
			return fmt.Errorf("%w: %s holds %d bytes but the head file is missing", ErrCorrupt, filepath.Base(f.Name()), fi.Size())
		}
	}
	return writeFileAtomic(s.cfg.Dir, headFile, formatHead(0), !s.cfg.NoSync)
}

// Close implements Store. With DeferSync it first makes every append durable
// (moving the head without fsync when NoSync is set too).
func (s *DiskStore) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	var err error
	if s.cfg.DeferSync {
		err = s.sync(!s.cfg.NoSync)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	return errors.Join(err, s.closeFiles())
}

func (s *DiskStore) closeFiles() error {
	var errs []error
	for _, f := range []*os.File{s.leaves, s.index, s.hashes, s.head, s.lock} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}
