package store

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Enqueue puts a signed result (which has no output) in the outbox for a dispatch that has no
// journal entry: a refusal, decided before anything ran. It returns
// ErrAlreadyStarted if the dispatch was begun (its result goes through
// Complete) and ErrQueued if a result for it is already queued.
func (s *Store) Enqueue(dispatchID string, result []byte) error {
	if dispatchID == "" || len(result) == 0 {
		return fmt.Errorf("%w: empty dispatch id or result", ErrInvalid)
	}
	return s.group.update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketJournal).Get([]byte(dispatchID)) != nil {
			return fmt.Errorf("%w: %s", ErrAlreadyStarted, dispatchID)
		}
		return enqueue(tx, dispatchID, result, nil)
	})
}

func enqueue(tx *bolt.Tx, dispatchID string, result, output []byte) error {
	ids := tx.Bucket(bucketOutboxIDs)
	if ids.Get([]byte(dispatchID)) != nil {
		return fmt.Errorf("%w: %s", ErrQueued, dispatchID)
	}
	ob := tx.Bucket(bucketOutbox)
	seq, err := ob.NextSequence()
	if err != nil {
		return err
	}
	rec, err := encodeRecord(outboxRecord{V: recordVersion, DispatchID: dispatchID, Result: result, Output: output})
	if err != nil {
		return err
	}
	key := binary.BigEndian.AppendUint64(nil, seq)
	if err := ob.Put(key, rec); err != nil {
		return err
	}
	return ids.Put([]byte(dispatchID), key)
}

// Outbox returns every result not yet acknowledged, oldest first. The
// session sends them all after each (re)connection; a server that already
// committed one acks it again.
func (s *Store) Outbox() ([]Pending, error) {
	var out []Pending
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			r, err := decodeOutbox(v)
			if err != nil {
				return fmt.Errorf("%w: outbox entry %x: %v", ErrCorrupt, k, err)
			}
			out = append(out, Pending{DispatchID: r.DispatchID, Result: r.Result, Output: r.Output})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	return slices.DeleteFunc(out, func(p Pending) bool { return s.acked[p.DispatchID] }), nil
}

// AckFlushInterval is how long an ack may wait before it is made durable.
// Acks are not worth an fsync each: an ack lost in a crash only means the
// result is sent once more after the restart, and a server that has
// recorded it acknowledges it again without recording anything twice. An
// agent busy with many runs makes one durable write of all the acks of an
// interval instead of one per run.
const AckFlushInterval = 200 * time.Millisecond

// Ack removes the result of dispatchID from the outbox: at once for Outbox
// and Known, durably within AckFlushInterval (or at Close). Acking a result
// that is not there (acked before) is not an error: acks may repeat. The
// journal entry stays, so the dispatch remains Known until Prune forgets it.
func (s *Store) Ack(dispatchID string) error {
	if dispatchID == "" {
		return fmt.Errorf("%w: empty dispatch id", ErrInvalid)
	}
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	if s.closed {
		return errClosed
	}
	s.acked[dispatchID] = true
	return nil
}

// FlushAcks makes the acks taken so far durable. Close calls it; so does a
// goroutine every AckFlushInterval. Acks it could not write stay pending and
// are tried again.
func (s *Store) FlushAcks() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.ackMu.Lock()
	ids := make([]string, 0, len(s.acked))
	for id := range s.acked {
		ids = append(ids, id)
	}
	s.ackMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	err := s.group.update(func(tx *bolt.Tx) error {
		outbox, outboxIDs := tx.Bucket(bucketOutbox), tx.Bucket(bucketOutboxIDs)
		for _, id := range ids {
			key := outboxIDs.Get([]byte(id))
			if key == nil {
				continue
			}
			if err := outbox.Delete(key); err != nil {
				return err
			}
			if err := outboxIDs.Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.ackMu.Lock()
	for _, id := range ids {
		delete(s.acked, id)
	}
	s.ackMu.Unlock()
	return nil
}

// flushAcks runs FlushAcks every AckFlushInterval until stop closes.
func (s *Store) flushAcks(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(AckFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.FlushAcks() // a failure keeps the acks pending; Close reports it
		case <-stop:
			return
		}
	}
}
