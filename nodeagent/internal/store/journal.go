package store

import (
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Begin records, durably, that the dispatch s is about to run. It MUST be
// called before the tool starts: once it returns nil, a crash at any later
// point leaves the entry for Interrupted to report. When s.Nonce is set,
// Begin also claims it (as ClaimNonce, until s.NonceUntil) in the same
// atomic step, so that no crash can separate the two. It returns, checked
// in this order, ErrAlreadyStarted if the dispatch id was ever begun (and
// not yet pruned), ErrQueued if a result for that id is already in the
// outbox, and ErrReplayed if the nonce was claimed before; then nothing is
// recorded.
func (s *Store) Begin(st Started) error {
	if st.DispatchID == "" {
		return fmt.Errorf("%w: empty dispatch id", ErrInvalid)
	}
	until := st.NonceUntil
	if until.IsZero() {
		until = st.ExpiresAt
	}
	if st.Nonce != "" && until.IsZero() {
		return fmt.Errorf("%w: a nonce needs an expiry", ErrInvalid)
	}
	rec, err := encodeRecord(journalRecord{V: recordVersion, DispatchID: st.DispatchID, IntentID: st.IntentID,
		Nonce: st.Nonce, ExpiresAt: st.ExpiresAt, StartedAt: st.StartedAt, Dispatch: st.Dispatch})
	if err != nil {
		return err
	}
	return s.group.update(func(tx *bolt.Tx) error {
		id := []byte(st.DispatchID)
		journal := tx.Bucket(bucketJournal)
		if journal.Get(id) != nil {
			return fmt.Errorf("%w: %s", ErrAlreadyStarted, st.DispatchID)
		}
		if tx.Bucket(bucketOutboxIDs).Get(id) != nil {
			return fmt.Errorf("%w: %s", ErrQueued, st.DispatchID)
		}
		if st.Nonce != "" {
			nonces := tx.Bucket(bucketNonces)
			if nonces.Get([]byte(st.Nonce)) != nil {
				return fmt.Errorf("%w: %q", ErrReplayed, st.Nonce)
			}
			if err := nonces.Put([]byte(st.Nonce), encodeTime(until)); err != nil {
				return err
			}
		}
		return journal.Put(id, rec)
	})
}

// Complete marks the begun dispatch finished and puts its signed result, with
// the captured output it commits to, in the outbox, in one atomic, durable step: after a crash either both have
// happened or neither. It returns ErrNotStarted for a dispatch never begun
// and ErrAlreadyCompleted for one already complete.
func (s *Store) Complete(dispatchID string, result, output []byte) error {
	if len(result) == 0 {
		return fmt.Errorf("%w: empty result", ErrInvalid)
	}
	return s.group.update(func(tx *bolt.Tx) error {
		id := []byte(dispatchID)
		journal := tx.Bucket(bucketJournal)
		v := journal.Get(id)
		if v == nil {
			return fmt.Errorf("%w: %s", ErrNotStarted, dispatchID)
		}
		r, err := readJournal(id, v)
		if err != nil {
			return err
		}
		if r.Done {
			return fmt.Errorf("%w: %s", ErrAlreadyCompleted, dispatchID)
		}
		r.Done = true
		rec, err := encodeRecord(r)
		if err != nil {
			return err
		}
		if err := journal.Put(id, rec); err != nil {
			return err
		}
		return enqueue(tx, dispatchID, result, output)
	})
}

// Interrupted returns the dispatches that were begun and never completed,
// oldest first: the runs a crash or restart cut short. It never lists a
// completed one.
func (s *Store) Interrupted() ([]Started, error) {
	var out []Started
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
			r, err := readJournal(k, v)
			if err != nil {
				return err
			}
			if !r.Done {
				out = append(out, r.started())
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Started) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.DispatchID, b.DispatchID))
	})
	return out, nil
}

// Known reports whether the dispatch id was begun (and not yet pruned) or
// has a result in the outbox: a dispatch pushed again that must not run again.
func (s *Store) Known(dispatchID string) (bool, error) {
	journaled, queued := false, false
	err := s.db.View(func(tx *bolt.Tx) error {
		id := []byte(dispatchID)
		journaled = tx.Bucket(bucketJournal).Get(id) != nil
		queued = tx.Bucket(bucketOutboxIDs).Get(id) != nil
		return nil
	})
	if err != nil || journaled || !queued {
		return journaled, err
	}
	s.ackMu.Lock()
	defer s.ackMu.Unlock()
	return !s.acked[dispatchID], nil // an acked result is gone, written or not
}

// readJournal decodes the journal record stored under key k.
func readJournal(k, v []byte) (journalRecord, error) {
	r, err := decodeJournal(v)
	if err == nil && r.DispatchID != string(k) {
		err = fmt.Errorf("record of dispatch %q stored under another id", r.DispatchID)
	}
	if err != nil {
		return journalRecord{}, fmt.Errorf("%w: journal entry %q: %v", ErrCorrupt, k, err)
	}
	return r, nil
}
