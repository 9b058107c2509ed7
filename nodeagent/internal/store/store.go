// Package store is the node agent's durable memory: the dispatch nonces it has
// seen, the journal of dispatches it started, and the outbox of signed results
// no server has acknowledged yet. It is one bbolt file, and every write is
// committed with fsync before the call returns (the writes of concurrent
// calls in one commit), so that what a call reported done survives a crash
// of the agent or the machine.
package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Errors of the store. Callers test them with errors.Is.
var (
	// ErrAlreadyStarted: Begin of a dispatch id that was begun before, or
	// Enqueue of one that was begun.
	ErrAlreadyStarted = errors.New("store: dispatch already started")
	// ErrNotStarted: Complete of a dispatch id that was never begun.
	ErrNotStarted = errors.New("store: dispatch was never started")
	// ErrAlreadyCompleted: Complete of a dispatch that is already complete.
	ErrAlreadyCompleted = errors.New("store: dispatch already completed")
	// ErrQueued: Enqueue of a dispatch id that already has a result queued.
	ErrQueued = errors.New("store: a result for this dispatch is already queued")
	// ErrReplayed: Begin of a dispatch whose nonce was claimed before.
	ErrReplayed = errors.New("store: nonce seen before")
	// ErrCorrupt: a record in the file cannot be read. The error names the
	// record; the store changes nothing because of it.
	ErrCorrupt = errors.New("store: corrupt record")
	// ErrInvalid: an argument that cannot be stored (an empty id or nonce).
	ErrInvalid = errors.New("store: invalid argument")
)

// JournalRetention is how long a finished journal entry is kept past its
// dispatch's expiry, so that a dispatch pushed again after it finished is
// still recognised as done (and not refused a second time).
const JournalRetention = time.Hour

var (
	bucketNonces    = []byte("nonces")     // nonce → until (8 bytes, unix ns)
	bucketJournal   = []byte("journal")    // dispatch id → journalRecord
	bucketOutbox    = []byte("outbox")     // sequence (8 bytes) → outboxRecord
	bucketOutboxIDs = []byte("outbox_ids") // dispatch id → sequence
)

// Store is the agent's durable store. It is safe for concurrent use; writes
// are atomic and durable when the call returns, except acks (Ack), which are
// made durable in the background. Concurrent writes share one transaction and
// one fsync (group commit, group.go).
type Store struct {
	db    *bolt.DB
	group groupCommit // every write goes through it (group.go)

	// acked holds the acks not yet written (Ack); flushMu serialises their
	// writing.
	ackMu   sync.Mutex
	acked   map[string]bool
	closed  bool
	flushMu sync.Mutex
	stop    chan struct{}
	done    chan struct{}
}

var errClosed = errors.New("store: closed")

// Open opens or creates the store at path (mode 0600). Only one process may
// hold it: a second Open waits one second and then fails.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: time.Second,
		// The free list is rebuilt from the pages on open instead of being
		// written by every commit: the start of a run, which the tool waits
		// for, writes fewer pages before its fsync, and a crash cannot leave
		// the list out of step with the pages (TestFreelistRebuiltAfterCrash).
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("store: %s is in use by another process", path)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketNonces, bucketJournal, bucketOutbox, bucketOutboxIDs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: initialise %s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		os.Chmod(path, 0o600)
	}
	s := &Store{db: db, group: groupCommit{db: db}, acked: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go s.flushAcks(s.stop, s.done)
	return s, nil
}

// Close writes the pending acks and closes the file. Calls after Close fail.
func (s *Store) Close() error {
	s.ackMu.Lock()
	if s.closed {
		s.ackMu.Unlock()
		return errClosed
	}
	s.closed = true
	s.ackMu.Unlock()
	close(s.stop)
	<-s.done
	ferr := s.FlushAcks()
	return errors.Join(ferr, s.db.Close())
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.db.Path() }
