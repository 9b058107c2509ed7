package store

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ClaimNonce records nonce as seen until the time until, atomically and
// durably. It reports fresh=true the first time a nonce is claimed and false
// on every later call while the nonce is remembered (until Prune forgets it,
// which it does only after until has passed: by then a dispatch carrying it
// has expired and is refused for that).
func (s *Store) ClaimNonce(nonce string, until time.Time) (fresh bool, err error) {
	if nonce == "" || until.IsZero() {
		return false, fmt.Errorf("%w: empty nonce or time", ErrInvalid)
	}
	err = s.group.update(func(tx *bolt.Tx) error {
		fresh = false // a write may run more than once (group.go)
		b := tx.Bucket(bucketNonces)
		if b.Get([]byte(nonce)) != nil {
			return nil
		}
		fresh = true
		return b.Put([]byte(nonce), encodeTime(until))
	})
	if err != nil {
		return false, err
	}
	return fresh, nil
}

// Prune forgets the nonces whose time is past (until <= now) and the finished
// journal entries whose dispatch expired more than JournalRetention before
// now. Entries never completed are kept: Interrupted must still find them.
// It returns how many records it removed. A corrupt record is an error and
// nothing is removed.
func (s *Store) Prune(now time.Time) (int, error) {
	n := 0
	err := s.group.update(func(tx *bolt.Tx) error {
		var dead [][]byte
		c := tx.Bucket(bucketNonces).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			until, err := decodeTime(v)
			if err != nil {
				return fmt.Errorf("%w: nonce %q: %v", ErrCorrupt, k, err)
			}
			if !until.After(now) {
				dead = append(dead, k)
			}
		}
		var deadJournal [][]byte
		c = tx.Bucket(bucketJournal).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			r, err := decodeJournal(v)
			if err != nil {
				return fmt.Errorf("%w: journal entry %q: %v", ErrCorrupt, k, err)
			}
			if r.Done && !r.ExpiresAt.Add(JournalRetention).After(now) {
				deadJournal = append(deadJournal, k)
			}
		}
		for _, k := range dead {
			if err := tx.Bucket(bucketNonces).Delete(k); err != nil {
				return err
			}
		}
		for _, k := range deadJournal {
			if err := tx.Bucket(bucketJournal).Delete(k); err != nil {
				return err
			}
		}
		n = len(dead) + len(deadJournal)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func encodeTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func decodeTime(b []byte) (time.Time, error) {
	if len(b) != 8 {
		return time.Time{}, fmt.Errorf("time is %d bytes, want 8", len(b))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), nil
}
