package raftnode

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestJournalPrefixCompaction: a deletion wholly below the journal's entries
// (a snapshot's compaction) leaves the journal as it is, and after a crash
// the deleted entries stay deleted and the journal's are all there; a
// deletion that reaches into the journal's entries empties it first, and
// those deleted are not brought back by a crash either.
func TestJournalPrefixCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 20; i++ {
		logs = append(logs, crashEntry(i, 1))
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(100, 100); err != nil { // 1..20 into bbolt
		t.Fatal(err)
	}
	for i := uint64(21); i <= 25; i++ {
		if err := s.StoreLogs([]*raft.Log{crashEntry(i, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	gen := s.j.gen
	if err := s.DeleteRange(1, 15); err != nil {
		t.Fatal(err)
	}
	if s.j.empty() || s.j.gen != gen {
		t.Fatalf("a deletion below the journal's entries copied it (empty %v, generation %d, was %d)", s.j.empty(), s.j.gen, gen)
	}
	checkJournalLog(t, s, 16, 25)
	crashClose(s)
	if s, err = OpenLogStore(path); err != nil {
		t.Fatal(err)
	}
	checkJournalLog(t, s, 16, 25)
	checkDeleted(t, s, 1, 15)

	// The journal holds 26 and 27 (the open copied 21..25 into bbolt); a
	// conflicting tail from 24 on reaches into them.
	if err := s.StoreLogs([]*raft.Log{crashEntry(26, 1), crashEntry(27, 1)}); err != nil {
		t.Fatal(err)
	}
	gen = s.j.gen
	if err := s.DeleteRange(24, 27); err != nil {
		t.Fatal(err)
	}
	if !s.j.empty() || s.j.gen != gen+1 {
		t.Fatalf("a deletion that does not lie below the journal's entries left it (empty %v, generation %d, was %d)", s.j.empty(), s.j.gen, gen)
	}
	crashClose(s)
	if s, err = OpenLogStore(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkJournalLog(t, s, 16, 23)
	checkDeleted(t, s, 1, 15)
	checkDeleted(t, s, 24, 27)
}

// checkDeleted fails t unless no entry from first to last is in s.
func checkDeleted(t *testing.T, s *LogStore, first, last uint64) {
	t.Helper()
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("deleted entry %d: got %v, want ErrLogNotFound", i, err)
		}
	}
}
