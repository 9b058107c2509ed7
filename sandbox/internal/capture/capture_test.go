package capture

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestWriter(t *testing.T) {
	t.Parallel()
	fired := 0
	w := New(10, func() { fired++ })
	all := bytes.Repeat([]byte("abcdefg"), 1000)
	for i := 0; i < len(all); i += 7 {
		w.Write(all[i : i+7])
	}
	r := w.Result()
	sum := sha256.Sum256(all)
	if got, want := r.Hash, "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("hash: got %s, want %s", got, want)
	}
	if r.Total != int64(len(all)) || string(r.Kept) != "abcdefgabc" || !r.Truncated || !r.Exceeded {
		t.Errorf("got %+v", r)
	}
	if fired != 1 {
		t.Errorf("onLimit fired %d times, want 1", fired)
	}
}

func TestWriterExactlyAtLimit(t *testing.T) {
	t.Parallel()
	fired := false
	w := New(4, func() { fired = true })
	w.Write([]byte("abcd"))
	if r := w.Result(); r.Truncated || r.Exceeded || fired {
		t.Errorf("at the limit: got %+v fired=%v", r, fired)
	}
}
