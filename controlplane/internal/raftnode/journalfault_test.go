package raftnode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// The journal after an fdatasync that failed (EIO): the bytes written may be
// in the file, the call said no. Each test goes on as Raft would, then
// "crashes" (the files closed without a checkpoint, as a SIGKILL leaves
// them) and checks what the store holds when it opens again.

// crashClose closes s's files as a killed process leaves them.
func crashClose(s *LogStore) {
	s.j.close()
	s.db.Close()
}

// failSyncOnce makes the next fdatasync fail with EIO.
func failSyncOnce(t *testing.T) {
	real := fdatasync
	fdatasync = func(*os.File) error { fdatasync = real; return syscall.EIO }
	t.Cleanup(func() { fdatasync = real })
}

// TestJournalFailedAppendNotReplayed: a record whose fdatasync failed, on an
// empty journal, must not be read after a restart: entries acknowledged
// since at the same indexes (a new leader's batch over journalDirect,
// straight to bbolt) must not be replaced by the unacknowledged ones of an
// earlier term.
func TestJournalFailedAppendNotReplayed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 9; i++ {
		logs = append(logs, crashEntry(i, 3))
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(100, 100); err != nil { // empties the journal
		t.Fatal(err)
	}
	failSyncOnce(t)
	if err := s.StoreLogs([]*raft.Log{crashEntry(10, 3), crashEntry(11, 3), crashEntry(12, 3)}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append: %v, want EIO", err)
	}
	logs = nil
	for i := uint64(10); i <= 400; i++ {
		logs = append(logs, crashEntry(i, 4))
	}
	if len(encodeJournalRecord(logs)) <= journalDirect {
		t.Fatal("the batch is not over journalDirect")
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	crashClose(s)
	if s, err = OpenLogStore(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := uint64(10); i <= 12; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Term != 4 {
			t.Errorf("entry %d after a restart is of term %d, want 4 (acknowledged): the failed append's record was read", i, l.Term)
		}
	}
}

// TestJournalFailedResetLosesNoAppend: a new generation's header written but
// its fdatasync failed (a deletion's checkpoint returns the error) must not
// let the next append be written under the generation the header may no
// longer name: that append is acknowledged and must be there after a
// restart.
func TestJournalFailedResetLosesNoAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 5; i++ {
		logs = append(logs, crashEntry(i, 1))
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	failSyncOnce(t)
	if err := s.DeleteRange(100, 100); !errors.Is(err, syscall.EIO) {
		t.Fatalf("deletion: %v, want EIO", err)
	}
	if err := s.StoreLogs([]*raft.Log{crashEntry(6, 1), crashEntry(7, 1)}); err != nil {
		t.Fatal(err)
	}
	crashClose(s)
	if s, err = OpenLogStore(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if last, _ := s.LastIndex(); last != 7 {
		t.Errorf("last index %d after a restart, want 7: an acknowledged append was lost", last)
	}
}
