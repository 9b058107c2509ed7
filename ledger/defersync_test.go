package ledger_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/ledger/ledgertest"
)

// openDeferred opens the store in dir with DeferSync and a log over it.
func openDeferred(t *testing.T, dir string) (*ledger.DiskStore, *ledger.Log) {
	t.Helper()
	vkey, _ := testKey(t)
	cfg := ledger.DefaultDiskConfig(dir)
	cfg.DeferSync = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	store, err := ledger.OpenDisk(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey, FullCheck: true})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store, l
}

func appendRange(t *testing.T, l *ledger.Log, from, to, batch int) {
	t.Helper()
	for lo := from; lo < to; lo += batch {
		var leaves [][]byte
		for i := lo; i < min(to, lo+batch); i++ {
			leaves = append(leaves, receipt(i))
		}
		if _, err := l.Append(leaves...); err != nil {
			t.Fatal(err)
		}
	}
}

// headOnDisk reads the size the head file holds.
func headOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "head"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		t.Fatalf("head file %q: %v", b, err)
	}
	return n
}

// fileLengths returns the lengths of the data files in dir.
func fileLengths(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, name := range []string{"leaves.dat", "leaves.idx", "hashes.dat"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fi.Size()
	}
	return out
}

// sameAsFresh checks that the store holds exactly what a store that was
// appended receipts 0..n-1 once, in memory, holds: every leaf and every
// stored hash, and that a full check of it passes.
func sameAsFresh(t *testing.T, store ledger.Store, n int) {
	t.Helper()
	mem := ledger.NewMemStore()
	ref, err := ledger.Open(context.Background(), mem, ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	appendRange(t, ref, 0, n, 7)
	if store.Size() != int64(n) {
		t.Fatalf("store holds %d leaves, want %d", store.Size(), n)
	}
	got, err := store.ReadLeaves(0, n)
	if err != nil {
		t.Fatal(err)
	}
	for i, leaf := range got {
		if !bytes.Equal(leaf, receipt(i)) {
			t.Fatalf("leaf %d: %q", i, leaf)
		}
	}
	indexes := make([]int64, tlog.StoredHashCount(int64(n)))
	for i := range indexes {
		indexes[i] = int64(i)
	}
	gh, err := store.ReadHashes(indexes)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mem.ReadHashes(indexes)
	for i := range indexes {
		if gh[i] != want[i] {
			t.Fatalf("stored hash %d differs from a fresh log's", i)
		}
	}
	l, err := ledger.Open(context.Background(), store, ledger.Config{FullCheck: true})
	if err != nil {
		t.Fatalf("full check: %v", err)
	}
	root, _ := l.Root(int64(n))
	refRoot, _ := ref.Root(int64(n))
	if root != refRoot {
		t.Fatalf("root %s, a fresh log's %s", root, refRoot)
	}
}

// TestDeferSyncCrashKeepsSyncedPrefix: appends after the last Sync are
// readable at once but not in the head; after a crash, however much of them
// reached the disk, the store opens as exactly the synced prefix, and
// appending the lost leaves again makes the same tree as never losing them.
func TestDeferSyncCrashKeepsSyncedPrefix(t *testing.T) {
	t.Parallel()
	const synced, appended = 30, 50
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, dir string, at map[string]int64)
	}{
		{"unsynced appends all on disk", func(*testing.T, string, map[string]int64) {}},
		{"unsynced appends lost", func(t *testing.T, dir string, at map[string]int64) {
			for name, n := range at {
				if err := os.Truncate(filepath.Join(dir, name), n); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"unsynced appends torn", func(t *testing.T, dir string, at map[string]int64) {
			// Half the leaf bytes, every index entry (pointing past the
			// end), and garbled hashes.
			leaves := filepath.Join(dir, "leaves.dat")
			fi, _ := os.Stat(leaves)
			os.Truncate(leaves, at["leaves.dat"]+(fi.Size()-at["leaves.dat"])/2)
			hashes := filepath.Join(dir, "hashes.dat")
			b, _ := os.ReadFile(hashes)
			for i := at["hashes.dat"]; i < int64(len(b)); i++ {
				b[i] ^= 0x5a
			}
			os.WriteFile(hashes, b, 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, l := openDeferred(t, dir)
			appendRange(t, l, 0, synced, 4)
			if got := headOnDisk(t, dir); got != 0 {
				t.Fatalf("head on disk says %d before any Sync", got)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if got := headOnDisk(t, dir); got != synced {
				t.Fatalf("head on disk says %d after Sync, want %d", got, synced)
			}
			at := fileLengths(t, dir)
			appendRange(t, l, synced, appended, 3)
			if got := headOnDisk(t, dir); got != synced {
				t.Fatalf("an unsynced append moved the head on disk to %d", got)
			}
			if l.Size() != appended {
				t.Fatalf("size %d after appending, want %d", l.Size(), appended)
			}
			if leaf, err := l.Leaf(appended - 1); err != nil || !bytes.Equal(leaf, receipt(appended-1)) {
				t.Fatalf("an unsynced leaf does not read back: %q %v", leaf, err)
			}
			if err := ledger.Crash(store); err != nil {
				t.Fatal(err)
			}
			tc.crash(t, dir, at)

			store, l = openDeferred(t, dir)
			sameAsFresh(t, store, synced)
			appendRange(t, l, synced, appended, 3)
			sameAsFresh(t, store, appended)
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
			store, _ = openDeferred(t, dir)
			sameAsFresh(t, store, appended)
		})
	}
}

// TestDeferSyncCheckpointSurvivesCrash: a checkpoint set after unsynced
// appends makes them durable first, so a crash right after it leaves a store
// that opens with the checkpoint and every leaf it commits to.
func TestDeferSyncCheckpointSurvivesCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, publish := testKey(t)
	store, l := openDeferred(t, dir)
	appendRange(t, l, 0, 40, 5)
	publish(l)
	at := fileLengths(t, dir)
	appendRange(t, l, 40, 45, 5) // after the checkpoint, never synced
	if err := ledger.Crash(store); err != nil {
		t.Fatal(err)
	}
	for name, n := range at {
		if err := os.Truncate(filepath.Join(dir, name), n); err != nil {
			t.Fatal(err)
		}
	}
	l, err := reopen(t, dir, 0, true)
	if err != nil {
		t.Fatalf("the store does not open after a crash right after a checkpoint: %v", err)
	}
	if c, _, ok := l.Latest(); !ok || c.Size != 40 || l.Size() != 40 {
		t.Fatalf("reopened: checkpoint %+v (%v), %d leaves; want both 40", c, ok, l.Size())
	}
}

// TestDeferSyncCloseSyncs: a store closed without a crash keeps every append.
func TestDeferSyncCloseSyncs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, l := openDeferred(t, dir)
	appendRange(t, l, 0, 10, 3)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if got := headOnDisk(t, dir); got != 10 {
		t.Fatalf("head on disk says %d after Close, want 10", got)
	}
	store, _ = openDeferred(t, dir)
	sameAsFresh(t, store, 10)
}

// TestDeferSyncConcurrent: Sync runs alongside appends, reads and
// checkpoints (run with -race); what it made durable reopens intact.
func TestDeferSyncConcurrent(t *testing.T) {
	t.Parallel()
	const n = 600
	dir := t.TempDir()
	_, publish := testKey(t)
	store, l := openDeferred(t, dir)
	var done atomic.Bool
	var wg sync.WaitGroup
	var syncs atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := l.Sync(); err != nil {
				t.Error(err)
				return
			}
			syncs.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for !done.Load() {
			if size := l.Size(); size > 0 {
				if leaf, err := l.Leaf(size - 1); err != nil || !bytes.Equal(leaf, receipt(int(size-1))) {
					t.Errorf("leaf %d: %q %v", size-1, leaf, err)
					return
				}
			}
		}
	}()
	for i := 0; i < n; i += 3 {
		appendRange(t, l, i, i+3, 3)
		if i%60 == 0 {
			publish(l)
		}
	}
	done.Store(true)
	wg.Wait()
	if syncs.Load() == 0 {
		t.Fatal("no Sync ran during the appends")
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Crash(store); err != nil {
		t.Fatal(err)
	}
	store, _ = openDeferred(t, dir)
	sameAsFresh(t, store, n)
}

// TestDeferSyncFailedFsyncStops: after an fsync fails, the store neither
// syncs nor appends again, even once the disk works: the kernel may have
// dropped the pages it could not write, and a head moved over them would
// commit to data that is not there.
func TestDeferSyncFailedFsyncStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, l := openDeferred(t, dir)
	appendRange(t, l, 0, 5, 5)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendRange(t, l, 5, 10, 5)
	mend := ledger.BreakLeavesFile(store)
	if err := l.Sync(); err == nil {
		t.Fatal("Sync succeeded with leaves.dat failing")
	}
	mend()
	if err := l.Sync(); err == nil || !strings.Contains(err.Error(), "fsync failed") {
		t.Fatalf("Sync after a failed fsync: %v", err)
	}
	if _, err := l.Append(receipt(10)); err == nil {
		t.Fatal("Append after a failed fsync succeeded")
	}
	if err := store.Close(); err == nil {
		t.Error("Close after a failed fsync reported no error")
	}
	if got := headOnDisk(t, dir); got != 5 {
		t.Fatalf("head on disk says %d, want the 5 synced before the failure", got)
	}
	store, _ = openDeferred(t, dir)
	sameAsFresh(t, store, 5)
}

// A store with DeferSync is still a Store, and Close makes it durable for
// the suite's reopen.
func TestDeferSyncConformance(t *testing.T) {
	t.Parallel()
	ledgertest.TestDurableStore(t, func(t *testing.T, dir string) ledger.Store {
		cfg := ledger.DefaultDiskConfig(dir)
		cfg.DeferSync = true
		s, err := ledger.OpenDisk(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
