package ledger

import (
	"bytes"
	"fmt"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// MemStore is a Store in memory, for tests and for short-lived logs. It is not
// durable and grows with the log.
type MemStore struct {
	mu         sync.RWMutex
	leaves     [][]byte
	hashes     []Hash
	checkpoint []byte
	closed     bool
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore { return &MemStore{} }

// Size implements Store.
func (s *MemStore) Size() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return int64(len(s.leaves))
}

// Append implements Store.
func (s *MemStore) Append(leaves [][]byte, hashes []Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	n := int64(len(s.leaves))
	if err := checkAppend(n, leaves, hashes); err != nil {
		return err
	}
	for _, l := range leaves {
		s.leaves = append(s.leaves, bytes.Clone(l))
	}
	s.hashes = append(s.hashes, hashes...)
	return nil
}

// checkAppend enforces the hash count that Store.Append promises.
func checkAppend(size int64, leaves [][]byte, hashes []Hash) error {
	want := tlog.StoredHashCount(size+int64(len(leaves))) - tlog.StoredHashCount(size)
	if int64(len(hashes)) != want {
		return fmt.Errorf("ledger: appending %d leaves at %d needs %d hashes, got %d", len(leaves), size, want, len(hashes))
	}
	return nil
}

// ReadLeaves implements Store.
func (s *MemStore) ReadLeaves(start int64, n int) ([][]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	if start < 0 || n < 0 || start+int64(n) > int64(len(s.leaves)) {
		return nil, fmt.Errorf("%w: leaves [%d, %d) in a store of %d", ErrNotFound, start, start+int64(n), len(s.leaves))
	}
	return append([][]byte(nil), s.leaves[start:start+int64(n)]...), nil
}

// ReadHashes implements Store.
func (s *MemStore) ReadHashes(indexes []int64) ([]Hash, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	out := make([]Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(s.hashes)) {
			return nil, fmt.Errorf("%w: hash %d in a store of %d hashes", ErrNotFound, x, len(s.hashes))
		}
		out[i] = s.hashes[x]
	}
	return out, nil
}

// SetCheckpoint implements Store.
func (s *MemStore) SetCheckpoint(signed []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.checkpoint = bytes.Clone(signed)
	return nil
}

// Checkpoint implements Store.
func (s *MemStore) Checkpoint() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	return bytes.Clone(s.checkpoint), nil
}

// Close implements Store.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
