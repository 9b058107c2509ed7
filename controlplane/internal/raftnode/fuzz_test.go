package raftnode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// FuzzLogDecode: any bytes decode to an error or to an entry that encodes
// back to exactly those bytes.
func FuzzLogDecode(f *testing.F) {
	for i := uint64(1); i < 8; i++ {
		f.Add(appendLog(nil, testLog(i)))
	}
	f.Add([]byte{logFormat})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeLog(7, b, &l); err != nil {
			return
		}
		if l.Index != 7 {
			t.Fatalf("index %d, want 7", l.Index)
		}
		if got := appendLog(nil, &l); !bytes.Equal(got, b) {
			t.Fatalf("decoded entry encodes to %x, not %x", got, b)
		}
	})
}

// FuzzJournalRecord: any payload decodes to an error or to entries whose
// record carries exactly those bytes, and any bytes after the header read
// as records of the journal's generation only when their checksum holds.
func FuzzJournalRecord(f *testing.F) {
	f.Add(encodeJournalRecord([]*raft.Log{testLog(1), testLog(2)})[8:])
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, p []byte) {
		j := &journal{gen: 3}
		if got, ok := j.record(p); ok && len(got) > len(p)-8 {
			t.Fatalf("a record of %d bytes read from %d", len(got), len(p))
		}
		logs, err := decodeJournalPayload(p)
		if err != nil {
			return
		}
		if got := encodeJournalRecord(logs)[8:]; !bytes.Equal(got, p) {
			t.Fatalf("decoded record encodes to %x, not %x", got, p)
		}
	})
}

// FuzzJournalHeader: any bytes in the two header slots parse as a header
// only when one of them carries the magic and a checksum that holds, and the
// journal read takes the higher generation of those that do.
func FuzzJournalHeader(f *testing.F) {
	h1, _ := journalHeader(1)
	h2, _ := journalHeader(2)
	f.Add(h1, h2)
	f.Add(h2[:20], h1)
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		img := make([]byte, journalSize)
		copy(img[:journalSlotB], a)
		copy(img[journalSlotB:journalHeaderSize], b)
		path := filepath.Join(t.TempDir(), "j")
		if err := os.WriteFile(path, img, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		ga, _, oka := parseJournalHeader(img[:journalHeaderLen], true)
		gb, _, okb := parseJournalHeader(img[journalSlotB:journalSlotB+journalHeaderLen], false)
		j, _, err := readJournal(file)
		switch {
		case !oka && !okb:
			if !errors.Is(err, ErrLogCorrupt) {
				t.Fatalf("no header slot checks: got %v, want ErrLogCorrupt", err)
			}
		case err != nil: // the records past the header block are zeros
			t.Fatalf("slots %d/%v and %d/%v: reading: %v", ga, oka, gb, okb, err)
		case oka && (!okb || ga >= gb) && (j.gen != ga || j.slot != 0),
			okb && (!oka || gb > ga) && (j.gen != gb || j.slot != journalSlotB):
			t.Fatalf("slots %d/%v and %d/%v: read generation %d from slot %d", ga, oka, gb, okb, j.gen, j.slot)
		}
	})
}
