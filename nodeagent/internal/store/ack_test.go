package store

import (
	"path/filepath"
	"testing"

	"github.com/writhq/writ/internal/eventually"
	bolt "go.etcd.io/bbolt"
)

// snapshot copies the store's file as it is on disk now, in one read
// transaction: what a crash at this instant would leave.
func snapshot(t *testing.T, s *Store) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crashed.db")
	if err := s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) }); err != nil {
		t.Fatal(err)
	}
	return path
}

func outboxIDs(t *testing.T, s *Store) []string {
	t.Helper()
	out, err := s.Outbox()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range out {
		ids = append(ids, p.DispatchID)
	}
	return ids
}

// TestAckDurableLater: an ack takes the result out of the outbox at once,
// but is written only by FlushAcks: a crash before it leaves the result in
// the outbox, to be sent (and acked) again; after it, the result is gone
// from the file too. Acks of unknown ids and repeated acks change nothing.
func TestAckDurableLater(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	close(s.stop) // no background flush in this test: it decides when
	<-s.done
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	close(s.done)

	for _, id := range []string{"run", "refused"} {
		if id == "run" {
			if err := s.Begin(started(id)); err != nil {
				t.Fatal(err)
			}
			if err := s.Complete(id, []byte("r-"+id), nil); err != nil {
				t.Fatal(err)
			}
		} else if err := s.Enqueue(id, []byte("r-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"run", "refused", "refused", "never-queued"} {
		if err := s.Ack(id); err != nil {
			t.Fatal(err)
		}
	}
	if ids := outboxIDs(t, s); len(ids) != 0 {
		t.Fatalf("outbox after the acks: %v", ids)
	}
	if k, _ := s.Known("refused"); k {
		t.Error("an acked refusal is still Known")
	}
	if k, _ := s.Known("run"); !k {
		t.Error("an acked run must stay Known through its journal entry")
	}

	crashed := open(t, snapshot(t, s))
	if ids := outboxIDs(t, crashed); len(ids) != 2 {
		t.Fatalf("a crash before the flush kept %v in the outbox, want both results (sent again)", ids)
	}

	if err := s.FlushAcks(); err != nil {
		t.Fatal(err)
	}
	flushed := open(t, snapshot(t, s))
	if ids := outboxIDs(t, flushed); len(ids) != 0 {
		t.Fatalf("after FlushAcks the file still has %v", ids)
	}
	if k, _ := flushed.Known("refused"); k {
		t.Error("a flushed ack of a refusal left it Known")
	}
	if len(s.acked) != 0 {
		t.Fatalf("%d acks still pending after the flush", len(s.acked))
	}
}

// TestAcksFlushedInBackgroundAndAtClose: without FlushAcks, an ack reaches
// the file within a few AckFlushIntervals, and Close writes the rest.
func TestAcksFlushedInBackgroundAndAtClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Enqueue(id, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	s.Ack("a")
	eventually.True(t, "the ack of a to be written in the background", func() bool {
		ids := outboxIDs(t, open(t, snapshot(t, s)))
		return len(ids) == 1 && ids[0] == "b"
	})
	s.Ack("b")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack("b"); err == nil {
		t.Error("Ack after Close succeeded")
	}
	if ids := outboxIDs(t, open(t, path)); len(ids) != 0 {
		t.Fatalf("Close did not write the pending ack: %v", ids)
	}
}
