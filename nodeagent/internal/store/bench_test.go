package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkDispatchPath measures the store's share of one dispatch — claim
// its nonce and journal it (one commit), complete it with its result, ack
// it: three durable commits, two before the result can be sent — beside the baseline of one empty durable bbolt commit on the
// same disk, so that the ratio says what the path costs in fsyncs.
func BenchmarkDispatchPath(b *testing.B) {
	b.Run("baseline_one_commit", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "base.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for i := 0; b.Loop(); i++ {
			db.Update(func(tx *bolt.Tx) error {
				bk, _ := tx.CreateBucketIfNotExists([]byte("b"))
				return bk.Put([]byte(fmt.Sprint(i)), []byte("x"))
			})
		}
	})
	b.Run("begin_complete_ack", func(b *testing.B) {
		s, err := Open(filepath.Join(b.TempDir(), "agent.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		result := make([]byte, 600)
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("d%d", i)
			if err := s.Begin(Started{DispatchID: id, IntentID: "i", Nonce: "n" + id, ExpiresAt: time.Now().Add(time.Minute), StartedAt: time.Now(), Dispatch: result}); err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(id, result, nil); err != nil {
				b.Fatal(err)
			}
			if err := s.Ack(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}
