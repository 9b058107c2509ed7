package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestJournalTornHeader: a crash while a new generation's header is written
// (Close's checkpoint here: the entries already in bbolt, the header going
// into the journal's other slot) leaves any mix of the old and the new
// header bytes in that slot. For every byte boundary, torn from the front
// and from the back, the store opens with every acknowledged entry, whether
// bbolt holds the journal's entries already or not (the journal's records
// still name the previous header, which is whole), and goes on: an append
// after it survives another reopen.
func TestJournalTornHeader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft.db")
	s := storeWith(t, path, 3)
	if err := s.DeleteRange(100, 100); err != nil { // into bbolt, a new generation
		t.Fatal(err)
	}
	for i := uint64(4); i <= 6; i++ {
		if err := s.StoreLogs([]*raft.Log{crashEntry(i, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if s.j.empty() {
		t.Fatal("appends did not go through the journal")
	}
	readAll := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	beforeDB, beforeJ := readAll(path), readAll(journalPath(path))
	oldSlot, gen := s.j.slot, s.j.gen
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	afterDB, afterJ := readAll(path), readAll(journalPath(path))
	slot := s.j.slot
	if slot == oldSlot || s.j.gen != gen+1 {
		t.Fatalf("Close's new generation %d went to slot %d, the current one's (%d, generation %d)", s.j.gen, slot, oldSlot, gen)
	}
	hdr := afterJ[slot : slot+int64(journalHeaderLen)]
	old := beforeJ[slot : slot+int64(journalHeaderLen)]
	if bytes.Equal(hdr, old) {
		t.Fatal("the new header is the bytes the slot held")
	}
	if _, _, ok := parseJournalHeader(old, slot == 0); !ok {
		t.Fatal("the slot written did not hold an earlier header: the mix is not tested")
	}

	run := func(name string, db, j []byte) {
		t.Helper()
		p := filepath.Join(dir, name, "raft.db")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, db, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(journalPath(p), j, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := OpenLogStore(p)
		if err != nil {
			t.Fatalf("%s: the store does not open: %v", name, err)
		}
		t.Run(name, func(t *testing.T) { checkJournalLog(t, r, 1, 6) })
		if err := r.StoreLogs([]*raft.Log{crashEntry(7, 1)}); err != nil {
			t.Fatal(err)
		}
		crashClose(r)
		if r, err = OpenLogStore(p); err != nil {
			t.Fatalf("%s: the store does not open a second time: %v", name, err)
		}
		checkJournalLog(t, r, 1, 7)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Dir(p))
	}
	// Close copied the journal into bbolt and zeroed its first record's
	// word (both durable) before it wrote the header.
	zeroed := bytes.Clone(beforeJ)
	clear(zeroed[journalHeaderSize : journalHeaderSize+8])
	for n := 0; n < journalHeaderLen; n++ {
		front := bytes.Clone(zeroed)
		copy(front[slot:], hdr[:n]) // the first n bytes written
		back := bytes.Clone(zeroed)
		copy(back[slot+int64(n):], hdr[n:]) // all but the first n
		if n == 0 {
			back = nil // the whole header: the finished Close
		}
		for _, c := range []struct {
			name string
			j    []byte
		}{{"front", front}, {"back", back}} {
			if c.j == nil {
				continue
			}
			run(fmt.Sprintf("%s%d", c.name, n), afterDB, c.j)
		}
	}
	// The journal as Close found it, its header damaged afterwards: the
	// records of the current generation are not dropped silently.
	damaged := bytes.Clone(beforeJ)
	damaged[oldSlot+int64(journalHeaderLen)-1] ^= 0xff
	p := filepath.Join(dir, "damaged", "raft.db")
	os.MkdirAll(filepath.Dir(p), 0o700)
	os.WriteFile(p, beforeDB, 0o600)
	os.WriteFile(journalPath(p), damaged, 0o600)
	if r, err := OpenLogStore(p); !errors.Is(err, ErrLogCorrupt) {
		if err == nil {
			r.Close()
		}
		t.Fatalf("the current header damaged, records after it: %v, want ErrLogCorrupt", err)
	}
	run("whole", afterDB, afterJ)
}

// TestJournalFirstFormat: a journal written by a build that knew one header
// slot (magic WRITJNL1 at offset 0, records after it, the second slot
// zero) opens with its records; the first new generation written over it
// leaves that magic in neither slot, so such a build refuses the file
// rather than read a generation that is no longer the journal's.
func TestJournalFirstFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "raft.db")
	s := storeWith(t, path, 3)
	// The file as that build left it at a crash: its header rewritten in
	// the first format in slot 0, with the same generation and salt.
	img, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	slot := s.j.slot
	h := append([]byte(journalMagicV1), img[slot+int64(len(journalMagic)):slot+int64(journalHeaderLen)-4]...)
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	clear(img[:journalHeaderSize])
	copy(img, h)
	crash := filepath.Join(t.TempDir(), "raft.db")
	copyFile(t, path, crash)
	if err := os.WriteFile(journalPath(crash), img, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()

	c, err := OpenLogStore(crash)
	if err != nil {
		t.Fatal(err)
	}
	checkJournalLog(t, c, 1, 3)
	if err := c.StoreLogs([]*raft.Log{crashEntry(4, 1)}); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(journalPath(crash))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, journalSlotB} {
		if string(after[at:at+len(journalMagicV1)]) == journalMagicV1 {
			t.Fatalf("slot %d still holds the first format's magic after a new generation", at)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenLogStore(crash)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	checkJournalLog(t, again, 1, 4)
}

// storeWith opens a log store at path and appends entries 1 to n, one
// append each (through the journal).
func storeWith(t *testing.T, path string, n uint64) *LogStore {
	t.Helper()
	s, err := OpenLogStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= n; i++ {
		if err := s.StoreLogs([]*raft.Log{crashEntry(i, 1)}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
