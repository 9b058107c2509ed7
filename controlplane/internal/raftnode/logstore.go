package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
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
// All methods are safe for concurrent use.
type LogStore struct {
	db *bolt.DB
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
	return &LogStore{db: db}, nil
}

// Close closes the file.
func (s *LogStore) Close() error { return s.db.Close() }

// FirstIndex returns the first index stored, 0 when the log is empty.
func (s *LogStore) FirstIndex() (uint64, error) { return s.edge(true) }

// LastIndex returns the last index stored, 0 when the log is empty.
func (s *LogStore) LastIndex() (uint64, error) { return s.edge(false) }

func (s *LogStore) edge(first bool) (i uint64, err error) {
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
	return i, err
}

// GetLog reads the entry of the given index into l, or returns
// raft.ErrLogNotFound.
func (s *LogStore) GetLog(index uint64, l *raft.Log) error {
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

// StoreLogs stores the entries in one transaction: all of them are durable
// when it returns nil, and none or all of them after a crash.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
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

// DeleteRange deletes the entries from min to max inclusive, in one
// transaction.
func (s *LogStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
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

// Set stores a stable value, durably when it returns nil.
func (s *LogStore) Set(key, val []byte) error {
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
