package ledger_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/ledger"
)

// An old leaf lies outside the tail that Open checks: the log opens, but the
// leaf is refused when read, the log then refuses everything, and Scrub and
// a full check find it.
func TestTamperOldLeafFoundOnReadAndScrub(t *testing.T) {
	t.Parallel()
	dir := buildStore(t, 100)
	flip(t, dir, "leaves.dat", 10*int64(len(receipt(10)))+3) // leaves 10..99 have one length
	full, err := reopen(t, dir, 16, true)
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(errText(err), "leaf 10:") {
		t.Errorf("open with FullCheck: got %v, want ErrCorrupt naming leaf 10", err)
	}
	if full != nil {
		full.Close()
	}
	l, err := reopen(t, dir, 16, false)
	if err != nil {
		t.Fatalf("open with a tail check of 16 leaves: %v (the flipped leaf is older)", err)
	}
	if _, err := l.ProveReceipt(40); err != nil {
		t.Fatalf("ProveReceipt(40) before the bad leaf was read: %v", err)
	}
	_, err = l.ProveReceipt(10)
	var le *ledger.LeafError
	if !errors.Is(err, ledger.ErrCorrupt) || !errors.As(err, &le) || le.Index != 10 {
		t.Fatalf("ProveReceipt(10): got %v, want a LeafError for leaf 10 wrapping ErrCorrupt", err)
	}
	if _, err := l.ProveReceipt(40); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("ProveReceipt(40) after corruption was found: got %v, want ErrCorrupt", err)
	}
	l.Close()
	l, err = reopen(t, dir, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.Scrub(context.Background())
	if !errors.As(err, &le) || le.Index != 10 {
		t.Errorf("Scrub: got %v, want a LeafError for leaf 10", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Restoring an old copy of the files while the newer checkpoint survives (as
// when a server restores an old snapshot) is refused.
func TestTamperOldSnapshot(t *testing.T) {
	t.Parallel()
	dir := buildStore(t, 50)
	snap := t.TempDir()
	copyDir(t, dir, snap)
	vkey, publish := testKey(t)
	store := newDiskStore(t, dir)
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 100; i++ {
		if _, err := l.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
	}
	publish(l)
	l.Close()
	copyFile(t, filepath.Join(dir, "checkpoint"), filepath.Join(snap, "checkpoint"))
	_, err = reopen(t, snap, 16, false)
	if !errors.Is(err, ledger.ErrCheckpointMismatch) || !strings.Contains(err.Error(), "checkpoint commits to 100 leaves but the store holds 50") {
		t.Errorf("old snapshot with a newer checkpoint: got %v, want ErrCheckpointMismatch saying 100 vs 50", err)
	}
}

// An append that wrote its data but not its head is ignored on open and cut
// back by the next append.
func TestTornAppendRecovered(t *testing.T) {
	t.Parallel()
	dir := buildStore(t, 20)
	for _, name := range []string{"leaves.dat", "leaves.idx", "hashes.dat"} {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("half-written append"))
		f.Close()
	}
	l, err := reopen(t, dir, 100, false)
	if err != nil {
		t.Fatalf("open after a torn append: %v", err)
	}
	if got := l.Size(); got != 20 {
		t.Errorf("size after a torn append: got %d, want 20", got)
	}
	if _, err := l.Append(receipt(20)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = reopen(t, dir, 0, true)
	if err != nil {
		t.Fatalf("full check after appending past a torn append: %v", err)
	}
	l.Close()
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A flipped interior hash off the root path and outside the tail is not seen
// on open, but the log refuses to serve the proof it would spoil.
func TestTamperInteriorHashNotServed(t *testing.T) {
	t.Parallel()
	dir := buildStore(t, 100)
	flip(t, dir, "hashes.dat", tlog.StoredHashIndex(1, 5)*ledger.HashSize) // node over leaves 10 and 11
	l, err := reopen(t, dir, 16, false)
	if err != nil {
		t.Fatalf("open with a tail check of 16 leaves: %v (the flipped hash is older)", err)
	}
	if _, err := l.ProveReceipt(50); err != nil {
		t.Fatalf("ProveReceipt(50), whose proof does not use the flipped hash: %v", err)
	}
	_, err = l.ProveReceipt(8) // its proof includes the node over 10 and 11
	if !errors.Is(err, ledger.ErrCheckpointMismatch) {
		t.Errorf("ProveReceipt(8): got %v, want ErrCheckpointMismatch", err)
	}
	if err := l.Scrub(context.Background()); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("Scrub: got %v, want ErrCorrupt", err)
	}
}
