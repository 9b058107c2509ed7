package raftnode

import (
	"bytes"
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
