// Package capture records what a tool writes: it hashes and counts every
// byte but keeps only the first limit bytes, so that the agent's memory stays
// bounded whatever the tool writes, and it signals once when the limit is
// passed so that the tool can be stopped while it is still writing.
package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"sync"
)

// Writer is an io.Writer safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	limit   int64
	kept    []byte
	total   int64
	sum     hash.Hash
	onLimit func()
	fired   bool
}

// New returns a Writer keeping at most limit bytes. onLimit (may be nil) is
// called once, from the goroutine that writes, when more than limit bytes
// have been written in total.
func New(limit int64, onLimit func()) *Writer {
	return &Writer{limit: limit, sum: sha256.New(), onLimit: onLimit}
}

// Write never fails: a tool that keeps writing past the limit is stopped by
// onLimit, not by a write error it could ignore or react to.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.sum.Write(p)
	w.total += int64(len(p))
	if room := w.limit - int64(len(w.kept)); room > 0 {
		n := int64(len(p))
		if n > room {
			n = room
		}
		w.kept = append(w.kept, p[:n]...)
	}
	fire := w.total > w.limit && !w.fired && w.onLimit != nil
	if fire {
		w.fired = true
	}
	w.mu.Unlock()
	if fire {
		w.onLimit()
	}
	return len(p), nil
}

// Result is what a Writer saw.
type Result struct {
	Kept      []byte
	Total     int64
	Hash      string // "sha256:"+hex of all bytes
	Truncated bool
	Exceeded  bool // more than limit bytes were written
}

// Result returns the bytes kept so far and the hash of everything so far.
func (w *Writer) Result() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sum.Sum(nil)
	kept := append([]byte(nil), w.kept...)
	return Result{
		Kept:      kept,
		Total:     w.total,
		Hash:      "sha256:" + hex.EncodeToString(s),
		Truncated: int64(len(kept)) < w.total,
		Exceeded:  w.total > w.limit,
	}
}
