package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// checkFile fails the test if bbolt finds the store's pages inconsistent:
// a page both free and in use, a page lost, a bad branch.
func checkFile(t *testing.T, s *Store, when string) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: the store's pages are inconsistent: %v", when, err)
	}
}

// TestFreelistRebuiltAfterCrash: the store does not write bbolt's free list
// with every commit (NoFreelistSync); it is rebuilt from the pages on open.
// A crash after any commit (a snapshot of the file between transactions,
// taken while pages are being freed and reused) reopens to a consistent
// file with every committed entry, and writing on from it never hands out a
// page still in use.
func TestFreelistRebuiltAfterCrash(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	big := bytes.Repeat([]byte("r"), 3000) // results that span pages
	var crashes []string
	for i := range 120 {
		id := fmt.Sprintf("d%03d", i)
		if err := s.Begin(started(id)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 6 {
			crashes = append(crashes, snapshot(t, s)) // begun, not complete
		}
		if err := s.Complete(id, big, big[:100]); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(id); err != nil {
			t.Fatal(err)
		}
		if i%40 == 39 {
			if err := s.FlushAcks(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Prune(t0.Add(time.Hour)); err != nil { // frees pages
				t.Fatal(err)
			}
		}
	}
	for n, path := range crashes {
		c := open(t, path)
		checkFile(t, c, fmt.Sprintf("crash %d reopened", n))
		cut, err := c.Interrupted()
		if err != nil || len(cut) != 1 {
			t.Fatalf("crash %d: interrupted %+v, %v; want the one run begun at the crash", n, cut, err)
		}
		if err := c.Begin(started(cut[0].DispatchID)); err == nil {
			t.Fatalf("crash %d: the run begun before the crash began again", n)
		}
		// Write on: pages freed before the crash are reused, none in use is.
		for i := range 60 {
			id := fmt.Sprintf("after%03d", i)
			if err := c.Begin(started(id)); err != nil {
				t.Fatal(err)
			}
			if err := c.Complete(id, big, nil); err != nil {
				t.Fatal(err)
			}
		}
		checkFile(t, c, fmt.Sprintf("crash %d written on", n))
		out, err := c.Outbox()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range out {
			if !bytes.Equal(p.Result, big) {
				t.Fatalf("crash %d: result of %s damaged after writing on (%d bytes)", n, p.DispatchID, len(p.Result))
			}
		}
		if got, _ := c.Interrupted(); len(got) != 1 || got[0].DispatchID != cut[0].DispatchID {
			t.Fatalf("crash %d: interrupted after writing on %+v, want only %s", n, got, cut[0].DispatchID)
		}
	}
}

// TestOpensStoreWithSyncedFreelist: a store file whose commits wrote the
// free list (bbolt's default) opens, keeps its entries, and stays
// consistent as the store writes on without it.
func TestOpensStoreWithSyncedFreelist(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	legacy, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	legacy.db.NoFreelistSync = false // from here its commits write the free list, as bbolt does by default
	for i := range 30 {
		id := fmt.Sprintf("old%02d", i)
		if err := legacy.Begin(started(id)); err != nil {
			t.Fatal(err)
		}
		if err := legacy.Complete(id, bytes.Repeat([]byte("o"), 3000), nil); err != nil {
			t.Fatal(err)
		}
	}
	legacy.Close()

	s := open(t, path)
	checkFile(t, s, "reopened")
	for i := range 30 {
		id := fmt.Sprintf("new%02d", i)
		if err := s.Begin(started(id)); err != nil {
			t.Fatal(err)
		}
		if err := s.Begin(started(fmt.Sprintf("old%02d", i))); err == nil {
			t.Fatalf("old%02d began again after the reopen", i)
		}
	}
	checkFile(t, s, "written on")
	if out, err := s.Outbox(); err != nil || len(out) != 30 {
		t.Fatalf("outbox after reopen: %d results, %v; want the 30 written before", len(out), err)
	}
}
