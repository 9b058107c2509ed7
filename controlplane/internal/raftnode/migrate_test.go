package raftnode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/pki"
)

// writeWAL makes a raft-wal v0.4.0 directory with real entries: small
// segments so that the log spans many, a compacted prefix and a truncated
// tail, and Raft's stable values. It returns the first and last index.
func writeWAL(t *testing.T, dir string) (first, last uint64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	storeBatches(t, w, 1, 300)
	if err := w.DeleteRange(1, 40); err != nil { // a snapshot's compaction
		t.Fatal(err)
	}
	if err := w.DeleteRange(296, 300); err != nil { // a follower's conflicting tail
		t.Fatal(err)
	}
	storeBatches(t, w, 296, 400)
	if err := w.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := w.SetUint64([]byte("LastVoteTerm"), 6); err != nil {
		t.Fatal(err)
	}
	if err := w.Set([]byte("LastVoteCand"), []byte("s3")); err != nil {
		t.Fatal(err)
	}
	checkLog(t, w, 41, 400)
	w.Close()
	meta.Close()
	return 41, 400
}

// storeBatches stores from..to ten entries at a time, as Raft does under
// load, so that raft-wal rotates segments between batches.
func storeBatches(t *testing.T, s raft.LogStore, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i += 10 {
		storeRange(t, s, i, min(i+9, to))
	}
}

func checkStable(t *testing.T, s raft.StableStore) {
	t.Helper()
	for k, want := range map[string]uint64{"CurrentTerm": 7, "LastVoteTerm": 6} {
		if got, err := s.GetUint64([]byte(k)); got != want || err != nil {
			t.Errorf("%s: got %d, %v, want %d", k, got, err, want)
		}
	}
	if got, err := s.Get([]byte("LastVoteCand")); !bytes.Equal(got, []byte("s3")) || err != nil {
		t.Errorf("LastVoteCand: got %q, %v, want s3", got, err)
	}
}

func TestMigrateWAL(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	walDir, dst := filepath.Join(root, "wal"), filepath.Join(root, "raft.db")
	first, last := writeWAL(t, walDir)
	m, err := MigrateWAL(walDir, dst)
	if err != nil {
		t.Fatal(err)
	}
	if m.First != first || m.Last != last || m.Entries != last-first+1 || len(m.Stable) != 3 {
		t.Fatalf("got %+v, want entries %d to %d and 3 stable keys", m, first, last)
	}
	if _, err := os.Stat(walDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the raft-wal directory is still in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.MovedTo, metadb.FileName)); err != nil {
		t.Fatalf("the raft-wal directory was not moved aside whole: %v", err)
	}
	if _, err := os.Stat(dst + ".migrating"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary store is left: %v", err)
	}
	s, err := OpenLogStore(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, first, last)
	checkStable(t, s)
}

// TestMigrateUnindexedSegment: the tail truncation in writeWAL leaves
// what hashicorp/raft-wal#31 is about, a sealed segment without its index
// block, on which raft-wal's GetLog fails after a reopen (and Raft panics at
// start); migration reads its entries frame by frame.
func TestMigrateUnindexedSegment(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	walDir, dst := filepath.Join(root, "wal"), filepath.Join(root, "raft.db")
	first, last := writeWAL(t, walDir)
	state, _, err := readWALMeta(walDir)
	if err != nil {
		t.Fatal(err)
	}
	var bad uint64
	for _, si := range state.Segments {
		if !si.SealTime.IsZero() && si.IndexStart == 0 {
			bad = si.MinIndex
		}
	}
	if bad == 0 {
		t.Fatalf("raft-wal left no sealed segment without an index block: %+v", state.Segments)
	}
	w, err := openWAL(walDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := w.GetLog(bad, &l); err == nil || !strings.Contains(err.Error(), "no index block") {
		t.Fatalf("raft-wal reading entry %d of the broken segment: got %v, want the raft-wal#31 error", bad, err)
	}
	w.Close()

	if _, err := MigrateWAL(walDir, dst); err != nil {
		t.Fatal(err)
	}
	s, err := OpenLogStore(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, first, last)
	checkStable(t, s)
}

// TestMigrateRefuses: a directory whose entries are gone is refused with
// ErrMigrate and left as it was, and no store is made.
func TestMigrateRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	walDir, dst := filepath.Join(root, "wal"), filepath.Join(root, "raft.db")
	writeWAL(t, walDir)
	segs, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if len(segs) < 3 {
		t.Fatalf("got %d segments, want several", len(segs))
	}
	if err := os.Truncate(segs[1], 64); err != nil {
		t.Fatal(err)
	}
	_, err := MigrateWAL(walDir, dst)
	if !errors.Is(err, ErrMigrate) {
		t.Fatalf("got %v, want ErrMigrate", err)
	}
	t.Log(err)
	if _, err := os.Stat(filepath.Join(walDir, metadb.FileName)); err != nil {
		t.Fatalf("the raft-wal directory was not left in place: %v", err)
	}
	for _, p := range []string{dst, dst + ".migrating"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s exists after a refused migration: %v", p, err)
		}
	}
}

// TestStartRefusesUnmigratable: a server whose raft-wal log cannot be
// migrated does not start, says why and what to run, and leaves it as it was.
func TestStartRefusesUnmigratable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	walDir := WALDir(dir)
	writeWAL(t, walDir)
	segs, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if len(segs) < 3 {
		t.Fatalf("got %d segments, want several", len(segs))
	}
	if err := os.Truncate(segs[1], 64); err != nil {
		t.Fatal(err)
	}
	f, err := fsm.New(fsm.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ca := newTestCA(t)
	n, err := Start(Config{ID: "s1", Dir: dir, Bind: "127.0.0.1:0", TLS: ca.tls(t, pki.RoleServer, "s1"), Bootstrap: true, Logger: quiet()}, f)
	if err == nil {
		n.Shutdown()
		t.Fatal("a server started on a log that could not be migrated")
	}
	if !errors.Is(err, ErrMigrate) || !strings.Contains(err.Error(), "writ operator migrate-log --data-dir "+dir) {
		t.Fatalf("got %v, want ErrMigrate naming writ operator migrate-log", err)
	}
	if _, err := os.Stat(filepath.Join(walDir, metadb.FileName)); err != nil {
		t.Fatalf("the raft-wal directory was not left in place: %v", err)
	}
	if _, err := os.Stat(LogStorePath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a log store was made: %v", err)
	}
}

// TestMigrateEmptyWAL: a raft-wal directory raft-wal never wrote to
// migrates to an empty store rather than keeping the server from starting.
func TestMigrateEmptyWAL(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	walDir, dst := filepath.Join(root, "wal"), filepath.Join(root, "raft.db")
	if err := os.MkdirAll(walDir, 0o700); err != nil {
		t.Fatal(err)
	}
	m, err := MigrateWAL(walDir, dst)
	if err != nil || m.Entries != 0 || len(m.Stable) != 0 {
		t.Fatalf("got %+v, %v, want an empty migration", m, err)
	}
	s, err := OpenLogStore(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, 0, 0)
}

// TestMigrationResumes: a migration that stopped after raft.db was renamed
// into place, before the raft-wal directory was moved aside, is finished by
// the next start, which opens raft.db as it is; a wal.migrated from an
// earlier migration is kept.
func TestMigrationResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	walDir := WALDir(dir)
	first, last := writeWAL(t, walDir)
	m, err := MigrateWAL(walDir, LogStorePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m.MovedTo, walDir); err != nil { // as if the move never happened
		t.Fatal(err)
	}
	if err := os.MkdirAll(walDir+".migrated", 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := openLogStore(Config{Dir: dir, Logger: quiet()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, first, last)
	checkStable(t, s)
	if _, err := os.Stat(walDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the raft-wal directory is still in place: %v", err)
	}
	moved, _ := filepath.Glob(walDir + ".migrated-*")
	if len(moved) != 1 {
		t.Fatalf("got %v, want the raft-wal directory beside the earlier wal.migrated", moved)
	}
}

// TestMigratePanicRefused: an entry whose bytes make raft-wal's codec panic
// (an overflowing varint) is refused with ErrMigrate, not a crash, and
// changes nothing.
func TestMigratePanicRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	walDir, dst := filepath.Join(root, "wal"), filepath.Join(root, "raft.db")
	writeWAL(t, walDir)
	segs, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if len(segs) < 2 {
		t.Fatal("want two segments or more")
	}
	// The second segment: none of its entries was compacted away.
	f, err := os.OpenFile(segs[1], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The first entry's data, after the file header (32 bytes) and its
	// frame header (8): eleven bytes of 0xff are no varint.
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 11), 32+8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = MigrateWAL(walDir, dst)
	if !errors.Is(err, ErrMigrate) {
		t.Fatalf("got %v, want ErrMigrate", err)
	}
	t.Log(err)
	for _, p := range []string{dst, dst + ".migrating"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s exists after a refused migration: %v", p, err)
		}
	}
}
