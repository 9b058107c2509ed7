package store

import (
	"bytes"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary bytes to the record decoders: they must
// never panic, and what they accept must encode and decode to the same record.
func FuzzDecodeRecord(f *testing.F) {
	j, _ := encodeRecord(journalRecord{V: 1, DispatchID: "d", IntentID: "i", Nonce: "n", ExpiresAt: t0, StartedAt: t0, Dispatch: []byte("{}")})
	o, _ := encodeRecord(outboxRecord{V: 1, DispatchID: "d", Result: []byte("{}"), Output: []byte{0xff, 'x'}})
	for _, s := range [][]byte{j, o, []byte(`{}`), []byte(`{"v":1}`), []byte(`{"v":1,"dispatch_id":"d","dispatch_id":"e"}`), nil} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeJournal(b); err == nil {
			enc, err := encodeRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			r2, err := decodeJournal(enc)
			if err != nil || r2.DispatchID != r.DispatchID || !bytes.Equal(r2.Dispatch, r.Dispatch) || r2.Done != r.Done ||
				!r2.ExpiresAt.Equal(r.ExpiresAt) || !r2.StartedAt.Equal(r.StartedAt) {
				t.Fatalf("journal record does not round-trip: %+v vs %+v (%v)", r, r2, err)
			}
		}
		if r, err := decodeOutbox(b); err == nil {
			enc, _ := encodeRecord(r)
			r2, err := decodeOutbox(enc)
			if err != nil || r2.DispatchID != r.DispatchID || !bytes.Equal(r2.Result, r.Result) || !bytes.Equal(r2.Output, r.Output) {
				t.Fatalf("outbox record does not round-trip: %+v vs %+v (%v)", r, r2, err)
			}
		}
	})
}
