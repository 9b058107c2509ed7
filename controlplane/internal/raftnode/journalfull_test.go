//go:build linux

package raftnode

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// TestJournalOnFullDisk: with the journal's entries not yet copied into
// bbolt and the disk full, the store still closes, opens again (the entries
// kept in the journal and read from memory), and stores terms; no
// acknowledged entry is lost. Without room to make a journal at all, the
// store opens and appends as bbolt commits.
func TestJournalOnFullDisk(t *testing.T) {
	dir, path := storeOnTmpfs(t, "size=8m")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if s.j == nil {
		t.Fatal("no journal with 8 MiB free")
	}
	// Fill the disk with a file, then append until the journal is full
	// and cannot be copied into bbolt.
	fill, err := os.Create(filepath.Join(dir, "fill"))
	for err == nil {
		_, err = fill.Write(make([]byte, 4096))
	}
	fill.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v, want ENOSPC", err)
	}
	var acked uint64
	for i := uint64(1); ; i++ {
		if err := s.StoreLogs([]*raft.Log{crashEntry(i, 1)}); err != nil {
			if !NoSpace(err) {
				t.Fatalf("append %d: %v, want ENOSPC", i, err)
			}
			break
		}
		acked = i
	}
	if acked < 100 || s.j.empty() {
		t.Fatalf("%d appends before the disk was full, journal empty %v: want the journal's room used", acked, s.j.empty())
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
		t.Fatalf("a term on the full disk: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("closing on the full disk: %v", err)
	}
	if s, err = OpenLogStore(path); err != nil {
		t.Fatalf("reopening on the full disk: %v", err)
	}
	for i := uint64(1); i <= acked; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil || string(l.Data) != string(crashEntry(i, 1).Data) {
			t.Fatalf("entry %d after reopening: %v", i, err)
		}
	}
	if last, _ := s.LastIndex(); last != acked {
		t.Fatalf("last index %d, want %d", last, acked)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatalf("a term after reopening on the full disk: %v", err)
	}
	// Space again: the next deletion copies the journal into bbolt.
	os.Remove(filepath.Join(dir, "fill"))
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if first, _ := s.FirstIndex(); first != 11 || !s.j.empty() {
		t.Fatalf("after a deletion with space: first index %d, journal empty %v", first, s.j.empty())
	}

	// No room for a journal at all.
	s.Close()
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o700)
	// The disk full, then 512 KiB given back: room for bbolt's first pages,
	// not for a journal.
	fill, err = os.Create(filepath.Join(dir, "fill2"))
	for err == nil {
		_, err = fill.Write(make([]byte, 4096))
	}
	fill.Close()
	st, _ := os.Stat(filepath.Join(dir, "fill2"))
	if err := os.Truncate(filepath.Join(dir, "fill2"), st.Size()-512<<10); err != nil {
		t.Fatal(err)
	}
	n, err := OpenLogStore(filepath.Join(other, "raft.db"))
	if err != nil {
		t.Fatalf("opening a new store with 512 KiB free: %v", err)
	}
	defer n.Close()
	if n.j != nil {
		t.Fatal("a journal was made with 512 KiB free")
	}
	if err := n.StoreLogs([]*raft.Log{crashEntry(1, 1)}); err != nil {
		t.Fatalf("an append without a journal: %v", err)
	}
}
