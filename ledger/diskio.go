package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/tlog"
)

// Sync makes every leaf appended so far durable: it fsyncs the leaf bytes,
// index entries and hashes, and only then writes the head with the size they
// cover and fsyncs it. Appends go on meanwhile: Sync holds the append lock
// only to write the head's 40 bytes, never over an fsync. A store with
// DeferSync is durable only up to its last Sync; one with NoSync may fail to
// open with ErrTruncated after a crash until Sync returns; one with neither
// has nothing left to sync.
//
// After an fsync fails, Sync and Append fail with that error from then on.
func (s *DiskStore) Sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.sync(true)
}

// sync moves the head to the size appended so far, fsyncing the data before
// and the head after when fsync is set. Called with syncMu held.
func (s *DiskStore) sync(fsync bool) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed != nil {
		return failed
	}
	size := s.size.Load() // the data of every leaf below it is written
	if size == s.synced.Load() {
		return nil
	}
	if fsync {
		if err := syncAll(s.leaves, s.index, s.hashes); err != nil {
			return s.fail(err)
		}
	}
	// Only now that the data is durable may the head say it is there.
	s.mu.Lock()
	if s.headSize < size { // without DeferSync, Append may have moved it further
		if _, err := s.head.WriteAt(formatHead(size), 0); err != nil {
			s.mu.Unlock()
			return s.fail(err)
		}
		s.headSize = size
	}
	s.mu.Unlock()
	if !fsync {
		return nil
	}
	if err := s.head.Sync(); err != nil {
		return s.fail(err)
	}
	s.markSynced(size)
	return nil
}

// fail records the first failed fsync or head write, which ends appends.
func (s *DiskStore) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failLocked(err)
}

func (s *DiskStore) failLocked(err error) error {
	if s.failed == nil {
		s.failed = fmt.Errorf("%w: %w", ErrSyncFailed, err)
	}
	return s.failed
}

// markSynced raises synced to size, which Sync and Append may race to do.
func (s *DiskStore) markSynced(size int64) {
	for {
		old := s.synced.Load()
		if old >= size || s.synced.CompareAndSwap(old, size) {
			return
		}
	}
}

// syncAll fsyncs the files concurrently, so that the file system can commit
// them in one journal transaction where it is able to.
func syncAll(files ...*os.File) error {
	errs := make(chan error, len(files))
	for _, f := range files {
		go func() { errs <- f.Sync() }()
	}
	var first error
	for range files {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Size implements Store.
func (s *DiskStore) Size() int64 { return s.size.Load() }

// Append implements Store. It writes the leaf bytes, their index entries and
// hashes past the committed end, syncs them, and only then moves the head, so a
// crash at any point leaves the previous committed store intact. With
// DeferSync it only writes: Sync syncs and moves the head.
func (s *DiskStore) Append(leaves [][]byte, hashes []Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.failed != nil {
		return s.failed
	}
	size := s.size.Load()
	if err := checkAppend(size, leaves, hashes); err != nil {
		return err
	}
	if len(leaves) == 0 {
		return nil
	}
	if s.excess {
		if err := s.cutExcess(); err != nil {
			return fmt.Errorf("ledger: append: %w", err)
		}
	}
	var n int
	for _, l := range leaves {
		n += len(l)
	}
	data := make([]byte, 0, n)
	index := make([]byte, 0, len(leaves)*indexEntrySize)
	start := s.dataEnd.Load()
	end := start
	for _, l := range leaves {
		data = append(data, l...)
		end += int64(len(l))
		index = binary.BigEndian.AppendUint64(index, uint64(end))
	}
	hbuf := make([]byte, 0, len(hashes)*HashSize)
	for _, h := range hashes {
		hbuf = append(hbuf, h[:]...)
	}
	writes := []struct {
		f   *os.File
		b   []byte
		off int64
	}{
		{s.leaves, data, start},
		{s.index, index, size * indexEntrySize},
		{s.hashes, hbuf, tlog.StoredHashCount(size) * HashSize},
	}
	for _, w := range writes {
		if _, err := w.f.WriteAt(w.b, w.off); err != nil {
			return fmt.Errorf("ledger: append: %w", err)
		}
	}
	newSize := size + int64(len(leaves))
	if !s.cfg.DeferSync {
		if err := s.commit(newSize); err != nil {
			return err
		}
	}
	s.dataEnd.Store(end)
	s.size.Store(newSize)
	if !s.cfg.DeferSync && !s.cfg.NoSync {
		s.markSynced(newSize)
	}
	return nil
}

// commit syncs the data just written and then moves the head to size, for an
// Append without DeferSync. Called with mu held.
func (s *DiskStore) commit(size int64) error {
	if !s.cfg.NoSync {
		if err := syncAll(s.leaves, s.index, s.hashes); err != nil {
			return s.failLocked(err)
		}
	}
	// Only now that the data is durable may the head say it is there.
	if _, err := s.head.WriteAt(formatHead(size), 0); err != nil {
		return s.failLocked(err)
	}
	s.headSize = size
	if !s.cfg.NoSync {
		if err := s.head.Sync(); err != nil {
			return s.failLocked(err)
		}
	}
	return nil
}

// ReadLeaves implements Store. It reads the index entries around the range and
// the leaf bytes with one read each.
func (s *DiskStore) ReadLeaves(start int64, n int) ([][]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	size := s.size.Load()
	dataEnd := s.dataEnd.Load() // loaded after size, so it covers every leaf below size
	if start < 0 || n < 0 || start > size || int64(n) > size-start {
		return nil, fmt.Errorf("%w: leaves [%d, %d) in a store of %d", ErrNotFound, start, start+int64(n), size)
	}
	if n == 0 {
		return [][]byte{}, nil
	}
	first := start - 1 // the entry before start holds where start begins
	if start == 0 {
		first = 0
	}
	ib := make([]byte, (start+int64(n)-first)*indexEntrySize)
	if _, err := s.index.ReadAt(ib, first*indexEntrySize); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, indexFile, err)
	}
	ends := make([]int64, 0, n+1)
	if start == 0 {
		ends = append(ends, 0)
	}
	for i := 0; i < len(ib); i += indexEntrySize {
		ends = append(ends, int64(binary.BigEndian.Uint64(ib[i:])))
	}
	lo, hi := ends[0], ends[len(ends)-1]
	for i := 1; i < len(ends); i++ {
		if ends[i] < ends[i-1] || ends[i] > dataEnd {
			return nil, fmt.Errorf("%w: %s: entry for leaf %d is out of order", ErrCorrupt, indexFile, start+int64(i-1))
		}
	}
	data := make([]byte, hi-lo)
	if _, err := s.leaves.ReadAt(data, lo); err != nil {
		return nil, fmt.Errorf("%w: %s: reading [%d, %d): %v", ErrCorrupt, leavesFile, lo, hi, err)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = data[ends[i]-lo : ends[i+1]-lo : ends[i+1]-lo]
	}
	return out, nil
}

// ReadHashes implements Store.
func (s *DiskStore) ReadHashes(indexes []int64) ([]Hash, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	count := tlog.StoredHashCount(s.size.Load())
	out := make([]Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= count {
			return nil, fmt.Errorf("%w: hash %d in a store of %d hashes", ErrNotFound, x, count)
		}
		if _, err := s.hashes.ReadAt(out[i][:], x*HashSize); err != nil {
			return nil, fmt.Errorf("%w: %s: hash %d: %v", ErrCorrupt, hashesFile, x, err)
		}
	}
	return out, nil
}

// SetCheckpoint implements Store. With DeferSync it syncs first: the
// checkpoint commits to leaves appended before it, and must never be durable
// while they are not.
func (s *DiskStore) SetCheckpoint(signed []byte) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.cfg.DeferSync {
		if err := s.sync(!s.cfg.NoSync); err != nil {
			return err
		}
	}
	return writeFileAtomic(s.cfg.Dir, checkpointFile, signed, !s.cfg.NoSync)
}

// Checkpoint implements Store.
func (s *DiskStore) Checkpoint() ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	b, err := os.ReadFile(filepath.Join(s.cfg.Dir, checkpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
