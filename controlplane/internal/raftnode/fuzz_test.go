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
