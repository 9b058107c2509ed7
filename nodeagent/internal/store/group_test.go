package store

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// holdWriter takes bbolt's writer lock, so that the next group's leader
// waits inside its commit while other writes queue behind it; release lets
// it go on.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	tx, err := s.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback() }
}

// waitGroup waits until a leader commits and queued writes wait behind it.
func waitGroup(t *testing.T, s *Store, queued int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s.group.mu.Lock()
		leading, n := s.group.leading, len(s.group.pending)
		s.group.mu.Unlock()
		if leading && n == queued {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for a leader and %d queued writes: leading %v, %d queued", queued, leading, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func journaled(s *Store, id string) bool {
	found := false
	s.db.View(func(tx *bolt.Tx) error {
		found = tx.Bucket(bucketJournal).Get([]byte(id)) != nil
		return nil
	})
	return found
}

// TestGroupCommitSharesOneCommit: two runs' writes that arrive while a
// commit is under way are committed together, in one transaction, and each
// call returns only once its own record is committed.
func TestGroupCommitSharesOneCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	if s.db.NoSync {
		t.Fatal("the store's bbolt file does not fsync its commits")
	}
	if err := s.Begin(started("done")); err != nil { // a run to complete in the group
		t.Fatal(err)
	}
	before := s.group.commitCount()
	release := holdWriter(t, s)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	call := func(name string, f func() error, check func() bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- errors.New(name + ": " + err.Error())
				return
			}
			if !check() {
				errs <- errors.New(name + " returned before its record was committed")
			}
		}()
	}
	call("leader's Begin", func() error { return s.Begin(started("lead")) }, func() bool { return journaled(s, "lead") })
	waitGroup(t, s, 0)
	call("Begin", func() error { return s.Begin(started("a")) }, func() bool { return journaled(s, "a") })
	call("Complete", func() error { return s.Complete("done", []byte(`{"r":1}`), []byte("out")) }, func() bool {
		out, err := s.Outbox()
		return err == nil && len(out) == 1 && out[0].DispatchID == "done"
	})
	waitGroup(t, s, 2)
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := s.group.commitCount() - before; got != 2 {
		t.Fatalf("three writes, two of them queued behind the first: got %d commits, want 2 (the leader's, then one for both)", got)
	}
	if got, _ := s.Interrupted(); len(got) != 2 || got[0].DispatchID != "a" || got[1].DispatchID != "lead" {
		t.Fatalf("got interrupted %+v, want a and lead", got)
	}
}

// TestGroupCommitFailureStaysAlone: a write of a group that fails is run
// again alone and only its caller sees the error; the group's other writes
// commit, and two writes racing for the same dispatch id still start it once.
func TestGroupCommitFailureStaysAlone(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	release := holdWriter(t, s)
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string][]error{}
	fresh := 0
	do := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f()
			mu.Lock()
			results[name] = append(results[name], err)
			mu.Unlock()
		}()
	}
	do("lead", func() error { return s.Begin(started("lead")) })
	waitGroup(t, s, 0)
	do("x", func() error { return s.Begin(started("x")) })
	waitGroup(t, s, 1)
	do("nonce", func() error {
		f, err := s.ClaimNonce("n1", t0.Add(time.Hour))
		if f {
			mu.Lock()
			fresh++
			mu.Unlock()
		}
		return err
	})
	waitGroup(t, s, 2)
	do("x", func() error { return s.Begin(started("x")) })
	waitGroup(t, s, 3)
	do("y", func() error { return s.Begin(started("y")) })
	waitGroup(t, s, 4)
	do("never begun", func() error { return s.Complete("ghost", []byte("r"), nil) })
	waitGroup(t, s, 5)
	release()
	wg.Wait()

	if errs := results["x"]; len(errs) != 2 || (errs[0] == nil) == (errs[1] == nil) ||
		!errors.Is(errors.Join(errs...), ErrAlreadyStarted) {
		t.Errorf("two Begins of x: got %v, want one nil and one ErrAlreadyStarted", errs)
	}
	for _, name := range []string{"lead", "y", "nonce"} {
		if errs := results[name]; len(errs) != 1 || errs[0] != nil {
			t.Errorf("%s: got %v, want nil", name, errs)
		}
	}
	if errs := results["never begun"]; len(errs) != 1 || !errors.Is(errs[0], ErrNotStarted) {
		t.Errorf("Complete of a dispatch never begun: got %v, want ErrNotStarted", errs)
	}
	if fresh != 1 {
		t.Errorf("the nonce was fresh %d times, want 1", fresh)
	}
	if again, err := s.ClaimNonce("n1", t0.Add(time.Hour)); err != nil || again {
		t.Errorf("claiming n1 again: got fresh=%v err=%v, want false nil", again, err)
	}
	got, _ := s.Interrupted()
	if len(got) != 3 || got[0].DispatchID != "lead" || got[1].DispatchID != "x" || got[2].DispatchID != "y" {
		t.Fatalf("got interrupted %+v, want lead, x and y", got)
	}
}

// TestGroupCommitKeepsOrder: when a write of a group fails, the writes that
// arrived before it still come first. Dispatches a, b and c share a nonce
// and queue in that order in one group behind lead's commit: a begins, b and
// c are refused, as they would be had each been a transaction of its own.
// When lead used the nonce too, all three are refused.
func TestGroupCommitKeepsOrder(t *testing.T) {
	for _, c := range []struct {
		leadShares bool
		want       map[string]bool // began
	}{
		{false, map[string]bool{"lead": true, "a": true, "b": false, "c": false}},
		{true, map[string]bool{"lead": true, "a": false, "b": false, "c": false}},
	} {
		got := queueBegins(t, c.leadShares)
		for id, began := range c.want {
			if (got[id] == nil) != began {
				t.Errorf("lead sharing the nonce %v: %s got %v, want began %v", c.leadShares, id, got[id], began)
			}
		}
	}
}

// queueBegins begins lead, then, while lead commits, queues the Begins of a,
// b and c, which share a nonce (lead too when leadShares), one after the
// other, and returns each Begin's error.
func queueBegins(t *testing.T, leadShares bool) map[string]error {
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	release := holdWriter(t, s)
	errs := map[string]chan error{}
	for i, id := range []string{"lead", "a", "b", "c"} {
		st := started(id)
		if id != "lead" || leadShares {
			st.Nonce = "shared"
		}
		errs[id] = make(chan error, 1)
		go func() { errs[id] <- s.Begin(st) }()
		waitGroup(t, s, i)
	}
	release()
	got := map[string]error{}
	for id, ch := range errs {
		got[id] = <-ch
	}
	return got
}
