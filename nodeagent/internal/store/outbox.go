package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Enqueue puts a signed result in the outbox for a dispatch that has no
// journal entry: a refusal, decided before anything ran. It returns
// ErrAlreadyStarted if the dispatch was begun (its result goes through
// Complete) and ErrQueued if a result for it is already queued.
func (s *Store) Enqueue(dispatchID string, result []byte) error {
	if dispatchID == "" || len(result) == 0 {
		return fmt.Errorf("%w: empty dispatch id or result", ErrInvalid)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketJournal).Get([]byte(dispatchID)) != nil {
			return fmt.Errorf("%w: %s", ErrAlreadyStarted, dispatchID)
		}
		return enqueue(tx, dispatchID, result)
	})
}

func enqueue(tx *bolt.Tx, dispatchID string, result []byte) error {
	ids := tx.Bucket(bucketOutboxIDs)
	if ids.Get([]byte(dispatchID)) != nil {
		return fmt.Errorf("%w: %s", ErrQueued, dispatchID)
	}
	ob := tx.Bucket(bucketOutbox)
	seq, err := ob.NextSequence()
	if err != nil {
		return err
	}
	rec, err := encodeRecord(outboxRecord{V: recordVersion, DispatchID: dispatchID, Result: result})
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
			out = append(out, Pending{DispatchID: r.DispatchID, Result: r.Result})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Ack removes the result of dispatchID from the outbox. Acking a result that
// is not there (acked before) is not an error: acks may repeat. The journal
// entry stays, so the dispatch remains Known until Prune forgets it.
func (s *Store) Ack(dispatchID string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		ids := tx.Bucket(bucketOutboxIDs)
		key := ids.Get([]byte(dispatchID))
		if key == nil {
			return nil
		}
		if err := tx.Bucket(bucketOutbox).Delete(key); err != nil {
			return err
		}
		return ids.Delete([]byte(dispatchID))
	})
}
