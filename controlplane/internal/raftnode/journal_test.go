package raftnode

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestJournal: entries appended through the journal are read back before
// and after a reopen (copied into bbolt), the journal's generation moves on
// at each copy, a record torn at the end and the records of an earlier
// generation are not taken, a damaged header refuses to open, and a journal
// left without its store is removed rather than read.
func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	gen0 := s.j.gen
	for i := uint64(1); i <= 3; i++ {
		if err := s.StoreLogs([]*raft.Log{crashEntry(i, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if s.j.empty() {
		t.Fatal("appends did not go through the journal")
	}
	checkJournalLog(t, s, 1, 3)
	// A crash here: the file as it is, read by a second opening.
	crashCopy := path + ".copy"
	copyFile(t, path, crashCopy)
	copyFile(t, journalPath(path), journalPath(crashCopy))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	c, err := OpenLogStore(crashCopy)
	if err != nil {
		t.Fatal(err)
	}
	checkJournalLog(t, c, 1, 3)
	if !c.j.empty() || c.j.gen != gen0+1 {
		t.Fatalf("after opening: journal empty %v, generation %d; want empty, %d", c.j.empty(), c.j.gen, gen0+1)
	}
	// Two records; the second torn (its last byte never written).
	if err := c.StoreLogs([]*raft.Log{crashEntry(4, 1)}); err != nil {
		t.Fatal(err)
	}
	torn := encodeJournalRecord([]*raft.Log{crashEntry(5, 1)})
	binary.BigEndian.PutUint32(torn[4:], c.j.sum(torn[:4], torn[8:]))
	if _, err := c.j.f.WriteAt(torn[:len(torn)-1], c.j.off); err != nil {
		t.Fatal(err)
	}
	copyFile(t, crashCopy, path)
	copyFile(t, journalPath(crashCopy), journalPath(path))
	c.Close()
	r, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	checkJournalLog(t, r, 1, 4)
	// The old generation's records are still in the file, after the header:
	// a new opening must not take them again, not even after a deletion.
	if err := r.DeleteRange(4, 4); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, err = OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	checkJournalLog(t, r, 1, 3)
	r.Close()

	// A damaged header: one slot damaged leaves the other's header (an
	// earlier generation, whose records the journal no longer holds); both
	// damaged refuse to open.
	f, err := os.OpenFile(journalPath(path), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 9); err != nil {
		t.Fatal(err)
	}
	if r, err = OpenLogStore(path); err != nil {
		t.Fatalf("a journal with one header slot damaged: %v", err)
	}
	checkJournalLog(t, r, 1, 3)
	crashClose(r)
	for _, slot := range []int64{0, journalSlotB} {
		if _, err := f.WriteAt([]byte{0xff}, slot+9); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if _, err := OpenLogStore(path); !errors.Is(err, ErrLogCorrupt) {
		t.Fatalf("a damaged journal header: got %v, want ErrLogCorrupt", err)
	}

	// A journal without its store (the store removed by hand) is not read.
	os.Remove(path)
	fresh, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := fresh.LastIndex(); last != 0 {
		t.Fatalf("a new store holds entries up to %d from a journal left behind", last)
	}
	fresh.Close()
}

// TestJournalFull: a batch that does not fit in the room left copies the
// journal into bbolt first; one larger than journalDirect goes straight to
// bbolt, beside the journal's entries. Nothing is lost either way, and the
// log's first and last index span both.
func TestJournalFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	big := func(i uint64, size int) []*raft.Log {
		return []*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: make([]byte, size)}}
	}
	gen := s.j.gen
	if err := s.StoreLogs(big(1, 100)); err != nil {
		t.Fatal(err)
	}
	// Larger than journalDirect: to bbolt, the journal's entry left in it.
	if err := s.StoreLogs(big(2, journalDirect+1)); err != nil {
		t.Fatal(err)
	}
	if s.j.empty() || s.j.gen != gen {
		t.Fatalf("a direct batch changed the journal (empty %v, generation %d, was %d)", s.j.empty(), s.j.gen, gen)
	}
	if first, _ := s.FirstIndex(); first != 1 {
		t.Fatalf("first index %d, want 1 (in the journal, before bbolt's first)", first)
	}
	next := uint64(3)
	for range journalSize / (journalDirect - 64) { // the last one does not fit
		if err := s.StoreLogs(big(next, journalDirect-64)); err != nil {
			t.Fatal(err)
		}
		next++
	}
	if s.j.gen != gen+1 {
		t.Fatalf("generation %d after the journal filled, want %d", s.j.gen, gen+1)
	}
	for i := uint64(1); i < next; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if first, _ := s.FirstIndex(); first != 1 {
		t.Fatalf("first index %d", first)
	}
	if last, _ := s.LastIndex(); last != next-1 {
		t.Fatalf("last index %d, want %d", last, next-1)
	}
	// And after a restart.
	s.Close()
	if s, err = OpenLogStore(path); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.LastIndex(); last != next-1 {
		t.Fatalf("after reopening, last index %d, want %d", last, next-1)
	}
}

func checkJournalLog(t *testing.T, s *LogStore, first, last uint64) {
	t.Helper()
	f, err1 := s.FirstIndex()
	l, err2 := s.LastIndex()
	if err1 != nil || err2 != nil || f != first || l != last {
		t.Fatalf("log is %d..%d (%v, %v), want %d..%d", f, l, err1, err2, first, last)
	}
	for i := first; i <= last; i++ {
		var got raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if want := crashEntry(i, 1); got.Term != want.Term || string(got.Data) != string(want.Data) {
			t.Fatalf("entry %d differs", i)
		}
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
