package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

// LogStore is Raft's log and stable store: one bbolt file in which every
// StoreLogs, DeleteRange and Set is one transaction, fsynced before it
// returns. bbolt commits by writing the new pages, fsyncing, then writing
// and fsyncing one of its two meta pages, and opens from the newer meta page
// whose checksum holds: a crash at any point leaves the file at the last
// committed transaction, which is what Raft needs of its log (an entry it
// was told is stored stays stored) and of its term and vote.
//
// An append is cheaper than a bbolt commit: StoreLogs writes its entries as
// one record of the append journal (journal.go) with one fdatasync, and the
// store copies the journal's entries into bbolt in one transaction when the
// journal is full, before a deletion, and on Close and Open. Until
// then reads find them in memory. Every entry StoreLogs acknowledged is in
// the journal or in bbolt, durably, whatever the moment of a crash.
//
// All methods are safe for concurrent use.
type LogStore struct {
	db *bolt.DB
	j  *journal // nil when there was no room to make it

	// wmu orders the writers (StoreLogs, DeleteRange, Set, Close).
	wmu sync.Mutex
	// mu guards pending: the journal's entries, encoded as in bbolt, not yet
	// copied into bbolt, from pendingFirst to pendingLast.
	mu                        sync.RWMutex
	pending                   map[uint64][]byte
	pendingFirst, pendingLast uint64
}

var (
	_ raft.LogStore    = (*LogStore)(nil)
	_ raft.StableStore = (*LogStore)(nil)
)

var (
	logsBucket   = []byte("logs")
	stableBucket = []byte("stable")
)

// errNotFound is what a StableStore answers for a key never set: Raft
// recognises it by its text.
var errNotFound = errors.New("not found")

// OpenLogStore opens or creates the store at path. A store another process
// has open is refused after a second rather than waited for.
func OpenLogStore(path string) (*LogStore, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// A journal is made after its store: one without a store is left
		// from a store removed, and belongs to no log.
		if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("raftnode: opening the log store %s: %w", path, err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: time.Second,
		// The free list is rebuilt from the file on open instead of being
		// written by every commit, as etcd does: a commit writes less, and a
		// crash cannot leave it out of step with the pages.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, fmt.Errorf("raftnode: opening the log store %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{logsBucket, stableBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("raftnode: opening the log store %s: %w", path, err)
	}
	s := &LogStore{db: db, pending: map[uint64][]byte{}}
	j, logs, err := openJournal(path)
	switch {
	case NoSpace(err):
		// No room to make the journal: every append is a bbolt commit
		// until a start finds room.
		return s, nil
	case err != nil:
		db.Close()
		return nil, err
	}
	s.j = j
	// What the journal holds goes into bbolt now, and the journal starts
	// again: copying it twice (a crash before the reset) puts the same
	// entries at the same indexes. With the disk full they stay in the
	// journal, read from memory, and appends go on after them.
	err = s.putAll(logs)
	if err == nil {
		err = j.reset()
	} else if NoSpace(err) {
		s.hold(logs)
		err = nil
	}
	if err != nil {
		j.close()
		db.Close()
		return nil, fmt.Errorf("raftnode: opening the log store %s: %w", path, err)
	}
	return s, nil
}

// hold keeps logs, written to the journal, in memory until they are copied
// into bbolt.
func (s *LogStore) hold(logs []*raft.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf []byte
	for _, l := range logs {
		buf = appendLog(buf[:0], l)
		s.pending[l.Index] = bytes.Clone(buf)
		if s.pendingFirst == 0 || l.Index < s.pendingFirst {
			s.pendingFirst = l.Index
		}
		s.pendingLast = max(s.pendingLast, l.Index)
	}
}

// Close copies the journal's entries into bbolt and closes both files.
func (s *LogStore) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.checkpoint()
	if NoSpace(err) {
		err = nil // the journal keeps them; the next Open copies them
	}
	if s.j != nil {
		if cerr := s.j.close(); err == nil {
			err = cerr
		}
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkpoint copies the journal's entries into bbolt, durably, then empties
// the journal. Called with wmu held.
func (s *LogStore) checkpoint() error {
	if s.j == nil || s.j.empty() {
		return nil
	}
	s.mu.RLock()
	logs := make([]*raft.Log, 0, len(s.pending))
	for i := s.pendingFirst; i <= s.pendingLast && s.pendingLast > 0; i++ {
		if v, ok := s.pending[i]; ok {
			l := &raft.Log{Index: i}
			if err := decodeLog(i, v, l); err != nil {
				s.mu.RUnlock()
				return err
			}
			logs = append(logs, l)
		}
	}
	s.mu.RUnlock()
	if err := s.putAll(logs); err != nil {
		return err
	}
	s.mu.Lock()
	s.pending, s.pendingFirst, s.pendingLast = map[uint64][]byte{}, 0, 0
	s.mu.Unlock()
	return s.j.reset()
}

// putAll stores logs in bbolt in one transaction.
func (s *LogStore) putAll(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(logsBucket)
		// Raft appends in index order: full pages, not half-full ones.
		b.FillPercent = 1
		var buf []byte
		for _, l := range logs {
			buf = appendLog(buf[:0], l)
			// Put keeps references to key and value until the commit.
			if err := b.Put(logKey(l.Index), bytes.Clone(buf)); err != nil {
				return err
			}
		}
		return nil
	})
}

// FirstIndex returns the first index stored, 0 when the log is empty.
func (s *LogStore) FirstIndex() (uint64, error) { return s.edge(true) }

// LastIndex returns the last index stored, 0 when the log is empty.
func (s *LogStore) LastIndex() (uint64, error) { return s.edge(false) }

func (s *LogStore) edge(first bool) (i uint64, err error) {
	s.mu.RLock()
	pf, pl := s.pendingFirst, s.pendingLast
	s.mu.RUnlock()
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(logsBucket).Cursor()
		var k []byte
		if first {
			k, _ = c.First()
		} else {
			k, _ = c.Last()
		}
		if k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	// The journal's entries and bbolt's are one run of indexes between
	// them: appends come after the last, and a deletion empties the journal
	// first.
	switch {
	case err != nil || pl == 0:
	case first && i == 0:
		i = pf
	case first:
		i = min(i, pf)
	default:
		i = max(i, pl)
	}
	return i, err
}

// GetLog reads the entry of the given index into l, or returns
// raft.ErrLogNotFound.
func (s *LogStore) GetLog(index uint64, l *raft.Log) error {
	s.mu.RLock()
	v, ok := s.pending[index]
	s.mu.RUnlock()
	if ok {
		return decodeLog(index, v, l)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(logsBucket).Get(logKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decodeLog(index, v, l)
	})
}

// StoreLog stores one entry.
func (s *LogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores the entries as one record of the journal, or, when they
// are more than journalDirect bytes, in one bbolt transaction: all of them are durable when
// it returns nil, and none or all of them after a crash.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.j == nil {
		return s.putAll(logs)
	}
	rec := encodeJournalRecord(logs)
	if len(rec) > journalDirect {
		// A large batch (a busy leader's) is a bbolt commit of its own: the
		// journal would fill at once, and copying it would cost a commit
		// anyway. The journal's entries stay where they are unless this
		// batch writes an index at or below them.
		if s.pendingLast >= logs[0].Index || s.j.broken {
			if err := s.checkpoint(); err != nil {
				return err
			}
		}
		return s.putAll(logs)
	}
	if s.j.broken || !s.j.fits(len(rec)) {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	if err := s.j.append(rec); err != nil {
		// The journal may hold part of the record, or all of it: copy what
		// was acknowledged into bbolt and start the journal again, so that
		// neither this record nor a later one is read after a restart.
		if cerr := s.checkpoint(); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	s.hold(logs)
	return nil
}

// DeleteRange deletes the entries from min to max inclusive, in one
// transaction.
//
// A range wholly below the journal's entries (compaction after a snapshot)
// is deleted from bbolt alone, the journal left as it is: replaying it after
// a crash puts back only indexes above the range. Any other range empties
// the journal into bbolt first, so that no record of it can bring back an
// entry deleted.
func (s *LogStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !s.journalAbove(max) {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		// Seek again after each Delete: Next after Delete steps over the
		// leaf as it was read, which is right only while the transaction
		// has not changed that leaf before; a Seek does not depend on it.
		c := tx.Bucket(logsBucket).Cursor()
		from := logKey(min)
		for k, _ := c.Seek(from); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Seek(from) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// journalAbove reports whether the journal holds entries, every one at an
// index above max, and nothing else: it is whole (not broken), and what it
// holds is what pending holds. Called with wmu held.
func (s *LogStore) journalAbove(max uint64) bool {
	if s.j == nil || s.j.broken || s.j.empty() {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pendingLast > 0 && s.pendingFirst > max
}

// Set stores a stable value, durably when it returns nil.
//
// The journal is left as it is: copying its entries again after a crash
// touches no stable value.
func (s *LogStore) Set(key, val []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(stableBucket).Put(bytes.Clone(key), bytes.Clone(val))
	})
}

// Get returns a stable value, or an error "not found" for a key never set.
func (s *LogStore) Get(key []byte) (val []byte, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(stableBucket).Get(key)
		if v == nil {
			return errNotFound
		}
		val = bytes.Clone(v)
		return nil
	})
	return val, err
}

// SetUint64 stores a stable number, little-endian as raft-wal did, so that
// values migrated from it are the same bytes.
func (s *LogStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.LittleEndian.AppendUint64(nil, val))
}

// GetUint64 returns a stable number, or 0 and an error "not found".
func (s *LogStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: stable value %q is %d bytes, not 8", ErrLogCorrupt, key, len(v))
	}
	return binary.LittleEndian.Uint64(v), nil
}
