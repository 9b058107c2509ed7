package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func started(id string) Started {
	return Started{DispatchID: id, IntentID: "in-" + id, Nonce: "nonce-" + id,
		ExpiresAt: t0.Add(time.Minute), StartedAt: t0, Dispatch: []byte(`{"id":"` + id + `"}`)}
}

func TestNonceClaimedOnceAndRemembered(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	s := open(t, path)
	if fresh, err := s.ClaimNonce("n1", t0.Add(time.Minute)); err != nil || !fresh {
		t.Fatalf("first claim: got fresh=%v err=%v, want true nil", fresh, err)
	}
	if fresh, err := s.ClaimNonce("n1", t0.Add(time.Hour)); err != nil || fresh {
		t.Fatalf("second claim: got fresh=%v err=%v, want false nil", fresh, err)
	}
	s.Close()
	s = open(t, path)
	if fresh, _ := s.ClaimNonce("n1", t0.Add(time.Minute)); fresh {
		t.Fatal("a nonce claimed before a restart was fresh again after it")
	}
	if n, err := s.Prune(t0.Add(30 * time.Second)); err != nil || n != 0 {
		t.Fatalf("prune before until: removed %d (err %v), want 0", n, err)
	}
	if fresh, _ := s.ClaimNonce("n1", t0.Add(time.Minute)); fresh {
		t.Fatal("a nonce still in its time was forgotten")
	}
	if n, err := s.Prune(t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("prune at until: removed %d (err %v), want 1", n, err)
	}
	if fresh, _ := s.ClaimNonce("n1", t0.Add(2*time.Minute)); !fresh {
		t.Fatal("a pruned nonce is still remembered")
	}
	if _, err := s.ClaimNonce("", t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty nonce: got %v, want ErrInvalid", err)
	}
}

// TestCrashBetweenBeginAndComplete closes the store after Begin, as a crash
// would leave it, and checks that the reopened store reports the run as
// interrupted, and never a completed one.
func TestCrashBetweenBeginAndComplete(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	s := open(t, path)
	for _, id := range []string{"d-done", "d-cut"} {
		if err := s.Begin(started(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete("d-done", []byte(`{"result":"done"}`), []byte("out\xff")); err != nil {
		t.Fatal(err)
	}
	s.Close() // the crash

	s = open(t, path)
	got, err := s.Interrupted()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DispatchID != "d-cut" || got[0].IntentID != "in-d-cut" ||
		string(got[0].Dispatch) != `{"id":"d-cut"}` || !got[0].ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("got interrupted %+v, want only d-cut with its fields", got)
	}
	if err := s.Begin(started("d-cut")); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("Begin after restart: got %v, want ErrAlreadyStarted", err)
	}
	if err := s.Complete("d-cut", []byte(`{"result":"unknown"}`), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Interrupted(); len(got) != 0 {
		t.Fatalf("got interrupted %+v after Complete, want none", got)
	}
	out, err := s.Outbox()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].DispatchID != "d-done" || out[1].DispatchID != "d-cut" || string(out[1].Result) != `{"result":"unknown"}` ||
		string(out[0].Output) != "out\xff" || out[1].Output != nil {
		t.Fatalf("got outbox %+v, want d-done with its output then d-cut", out)
	}
}

func TestJournalAndOutboxRules(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	check := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", name, err, want)
		}
	}
	check("Complete never begun", s.Complete("nope", []byte("r"), nil), ErrNotStarted)
	check("Begin", s.Begin(started("d1")), nil)
	check("Begin twice", s.Begin(started("d1")), ErrAlreadyStarted)
	check("Enqueue begun", s.Enqueue("d1", []byte("r")), ErrAlreadyStarted)
	check("Complete", s.Complete("d1", []byte("r1"), nil), nil)
	check("Complete twice", s.Complete("d1", []byte("r1"), nil), ErrAlreadyCompleted)
	check("Enqueue refusal", s.Enqueue("d2", []byte("r2")), nil)
	check("Enqueue twice", s.Enqueue("d2", []byte("r2")), ErrQueued)
	check("Begin queued", s.Begin(started("d2")), ErrQueued)
	check("Complete empty", s.Complete("d1", nil, nil), ErrInvalid)
	check("Begin empty id", s.Begin(Started{}), ErrInvalid)

	for _, id := range []string{"d1", "d2"} {
		if k, err := s.Known(id); err != nil || !k {
			t.Errorf("Known(%s) = %v, %v; want true", id, k, err)
		}
	}
	if k, _ := s.Known("d3"); k {
		t.Error("Known(d3) = true for a dispatch never seen")
	}
	check("Ack", s.Ack("d1"), nil)
	check("Ack again", s.Ack("d1"), nil)
	check("Ack refusal", s.Ack("d2"), nil)
	if out, _ := s.Outbox(); len(out) != 0 {
		t.Errorf("outbox after acks: %+v, want empty", out)
	}
	if k, _ := s.Known("d1"); !k {
		t.Error("an acked run is no longer Known: a re-push would run it again")
	}
	check("Begin acked run", s.Begin(started("d1")), ErrAlreadyStarted)
}

func TestBeginClaimsTheNonceInTheSameStep(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	if err := s.Begin(started("d1")); err != nil {
		t.Fatal(err)
	}
	if fresh, _ := s.ClaimNonce("nonce-d1", t0.Add(time.Hour)); fresh {
		t.Fatal("Begin did not claim the dispatch's nonce")
	}
	replay := started("d2")
	replay.Nonce = "nonce-d1"
	if err := s.Begin(replay); !errors.Is(err, ErrReplayed) {
		t.Fatalf("Begin with a used nonce: got %v, want ErrReplayed", err)
	}
	if k, _ := s.Known("d2"); k {
		t.Fatal("a refused Begin recorded the dispatch")
	}
	claimed := started("d3")
	s.ClaimNonce(claimed.Nonce, t0.Add(time.Hour))
	if err := s.Begin(claimed); !errors.Is(err, ErrReplayed) {
		t.Fatalf("Begin after ClaimNonce: got %v, want ErrReplayed", err)
	}
	noExpiry := started("d4")
	noExpiry.ExpiresAt = time.Time{}
	if err := s.Begin(noExpiry); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Begin with a nonce and no expiry: got %v, want ErrInvalid", err)
	}
}

func TestPruneForgetsOnlyWhatIsPast(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	for _, id := range []string{"done", "cut"} {
		if err := s.Begin(started(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete("done", []byte("r"), nil); err != nil {
		t.Fatal(err)
	}
	expiry := t0.Add(time.Minute)
	// The nonces Begin claimed go at the dispatches' expiry; the journal
	// entries stay for JournalRetention more.
	if n, err := s.Prune(expiry.Add(JournalRetention - time.Second)); err != nil || n != 2 {
		t.Fatalf("prune within retention removed %d (err %v), want the 2 nonces", n, err)
	}
	if n, err := s.Prune(expiry.Add(JournalRetention)); err != nil || n != 1 {
		t.Fatalf("prune after retention removed %d (err %v), want 1", n, err)
	}
	if k, _ := s.Known("done"); !k {
		t.Error("the pruned run's result is still in the outbox: it must stay Known")
	}
	s.Ack("done")
	if k, _ := s.Known("done"); k {
		t.Error("a pruned, acked run is still Known")
	}
	if got, _ := s.Interrupted(); len(got) != 1 || got[0].DispatchID != "cut" {
		t.Fatalf("prune dropped an interrupted run: %+v", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "agent.db"))
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	fresh, begun := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := s.ClaimNonce("same", t0.Add(time.Hour))
			if err != nil {
				t.Error(err)
			}
			err = s.Begin(started("same"))
			if err != nil && !errors.Is(err, ErrAlreadyStarted) {
				t.Error(err)
			}
			id := fmt.Sprintf("d%02d", i)
			if err := s.Begin(started(id)); err != nil {
				t.Error(err)
			}
			if err := s.Complete(id, []byte("r"+id), nil); err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if f {
				fresh++
			}
			if err == nil {
				begun++
			}
		}()
	}
	wg.Wait()
	if fresh != 1 || begun != 1 {
		t.Fatalf("%d goroutines: nonce fresh %d times, dispatch begun %d times; want 1 and 1", n, fresh, begun)
	}
	out, err := s.Outbox()
	if err != nil || len(out) != n {
		t.Fatalf("outbox has %d results (err %v), want %d", len(out), err, n)
	}
}

// TestCorruptRecords writes broken records into the file and checks that
// every reader names the record and that Prune removes nothing.
func TestCorruptRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	s := open(t, path)
	s.Begin(started("good"))
	s.Enqueue("queued", []byte("r"))
	s.ClaimNonce("n", t0)
	s.Close()

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketJournal).Put([]byte("broken"), []byte(`{"v":1,"dispatch_id":"broken",`))
		tx.Bucket(bucketJournal).Put([]byte("moved"), []byte(`{"v":1,"dispatch_id":"other","intent_id":"","nonce":"","expires_at":"2026-01-01T00:00:00Z","started_at":"2026-01-01T00:00:00Z","dispatch":"","done":false}`))
		tx.Bucket(bucketOutbox).Put([]byte{0, 0, 0, 0, 0, 0, 0, 9}, []byte(`{"v":2,"dispatch_id":"x","result":"eA=="}`))
		tx.Bucket(bucketNonces).Put([]byte("short"), []byte{1, 2})
		return nil
	})
	db.Close()

	s = open(t, path)
	if _, err := s.Interrupted(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("Interrupted: got %v, want ErrCorrupt naming \"broken\"", err)
	}
	if _, err := s.Outbox(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("Outbox: got %v, want ErrCorrupt about the version", err)
	}
	if n, err := s.Prune(t0.Add(time.Hour)); !errors.Is(err, ErrCorrupt) || n != 0 {
		t.Errorf("Prune: removed %d, got %v; want 0 and ErrCorrupt", n, err)
	}
	if fresh, _ := s.ClaimNonce("n", t0); fresh {
		t.Error("a failed Prune forgot a nonce")
	}
	if err := s.Complete("moved", []byte("r"), nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "another id") {
		t.Errorf("Complete of a record under the wrong key: got %v, want ErrCorrupt", err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	open(t, path)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open: got %v, want an in-use error", err)
	}
}
