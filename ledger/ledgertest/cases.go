package ledgertest

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/ledger"
)

func testEmpty(t *testing.T, s ledger.Store) {
	defer s.Close()
	if got := s.Size(); got != 0 {
		t.Errorf("Size of a new store: got %d, want 0", got)
	}
	if got, err := s.ReadLeaves(0, 0); err != nil || len(got) != 0 {
		t.Errorf("ReadLeaves(0, 0): got %d leaves, %v; want none, nil", len(got), err)
	}
	if got, err := s.Checkpoint(); err != nil || got != nil {
		t.Errorf("Checkpoint of a new store: got %q, %v; want nil, nil", got, err)
	}
	if err := s.Append(nil, nil); err != nil || s.Size() != 0 {
		t.Errorf("Append of nothing: got size %d, %v; want 0, nil", s.Size(), err)
	}
}

func testAppendRead(t *testing.T, s ledger.Store) {
	defer s.Close()
	want := fill(t, s, 1, 2, 5, 1, 24, 31)
	if got := s.Size(); got != 64 {
		t.Fatalf("Size after 64 appends: got %d", got)
	}
	if err := checkContents(s, 64, want); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ start, n int64 }{{0, 1}, {3, 1}, {2, 3}, {63, 1}, {10, 40}} {
		got, err := s.ReadLeaves(r.start, int(r.n))
		if err != nil || int64(len(got)) != r.n {
			t.Fatalf("ReadLeaves(%d, %d): got %d leaves, %v", r.start, r.n, len(got), err)
		}
		for i, l := range got {
			if !bytes.Equal(l, leaf(r.start+int64(i))) {
				t.Errorf("ReadLeaves(%d, %d)[%d]: got %q, want %q", r.start, r.n, i, l, leaf(r.start+int64(i)))
			}
		}
	}
}

func testWrongHashCount(t *testing.T, s ledger.Store) {
	defer s.Close()
	want := fill(t, s, 4)
	var more []ledger.Hash = append([]ledger.Hash(nil), want...)
	leaves, hashes := batch(t, &more, 4, 3)
	if err := s.Append(leaves, hashes[1:]); err == nil {
		t.Errorf("Append with a hash missing: got nil error")
	}
	if got := s.Size(); got != 4 {
		t.Errorf("Size after a refused Append: got %d, want 4", got)
	}
	if err := checkContents(s, 4, want); err != nil {
		t.Error(err)
	}
	if err := s.Append(leaves, hashes); err != nil || s.Size() != 7 {
		t.Errorf("Append after a refused one: got size %d, %v; want 7, nil", s.Size(), err)
	}
}

func testAppendCopies(t *testing.T, s ledger.Store) {
	defer s.Close()
	var want []ledger.Hash
	leaves, hashes := batch(t, &want, 0, 2)
	if err := s.Append(leaves, hashes); err != nil {
		t.Fatal(err)
	}
	for _, l := range leaves {
		for i := range l {
			l[i] ^= 0xff
		}
	}
	if err := checkContents(s, 2, want); err != nil {
		t.Errorf("after the caller changed its slices: %v", err)
	}
}

func testMissing(t *testing.T, s ledger.Store) {
	defer s.Close()
	fill(t, s, 5)
	_, err := s.ReadLeaves(5, 1)
	wantErr(t, "ReadLeaves(5, 1) of 5", err, ledger.ErrNotFound)
	_, err = s.ReadLeaves(4, 2)
	wantErr(t, "ReadLeaves(4, 2) of 5", err, ledger.ErrNotFound)
	_, err = s.ReadLeaves(-1, 1)
	wantErr(t, "ReadLeaves(-1, 1)", err, ledger.ErrNotFound)
	_, err = s.ReadHashes([]int64{0, tlog.StoredHashCount(5)})
	wantErr(t, "ReadHashes past the end", err, ledger.ErrNotFound)
	_, err = s.ReadHashes([]int64{-1})
	wantErr(t, "ReadHashes(-1)", err, ledger.ErrNotFound)
}

func testCheckpoint(t *testing.T, s ledger.Store) {
	defer s.Close()
	for _, c := range []string{"first\n", "second, longer checkpoint\n"} {
		if err := s.SetCheckpoint([]byte(c)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Checkpoint(); err != nil || string(got) != c {
			t.Errorf("Checkpoint after SetCheckpoint(%q): got %q, %v", c, got, err)
		}
	}
}

func testConcurrentReads(t *testing.T, s ledger.Store) {
	defer s.Close()
	// Precompute every batch so that readers can check any prefix against want.
	const batches = 40
	all := make([][][]byte, batches)
	hashes := make([][]ledger.Hash, batches)
	var want []ledger.Hash
	var size int64
	for i := range all {
		all[i], hashes[i] = batch(t, &want, size, i%5+1)
		size += int64(i%5 + 1)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				n := s.Size()
				if err := checkContents(s, n, want); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range all {
		if err := s.Append(all[i], hashes[i]); err != nil {
			t.Error(err)
			break
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("reader during appends: %v", err)
	}
}

func testClosed(t *testing.T, s ledger.Store) {
	fill(t, s, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.ReadLeaves(0, 1)
	wantErr(t, "ReadLeaves after Close", err, ledger.ErrClosed)
	_, err = s.ReadHashes([]int64{0})
	wantErr(t, "ReadHashes after Close", err, ledger.ErrClosed)
	_, err = s.Checkpoint()
	wantErr(t, "Checkpoint after Close", err, ledger.ErrClosed)
	wantErr(t, "SetCheckpoint after Close", s.SetCheckpoint([]byte("x\n")), ledger.ErrClosed)
	var more []ledger.Hash
	leaves, hashes := batch(t, &more, 0, 1)
	wantErr(t, "Append after Close", s.Append(leaves, hashes), ledger.ErrClosed)
}

func testReopen(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	want := fill(t, s, 3, 10, 1)
	if err := s.SetCheckpoint([]byte("checkpoint\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if got := s.Size(); got != 14 {
		t.Fatalf("Size after reopen: got %d, want 14", got)
	}
	if err := checkContents(s, 14, want); err != nil {
		t.Errorf("after reopen: %v", err)
	}
	if got, err := s.Checkpoint(); err != nil || string(got) != "checkpoint\n" {
		t.Errorf("Checkpoint after reopen: got %q, %v", got, err)
	}
	leaves, hashes := batch(t, &want, 14, 2)
	if err := s.Append(leaves, hashes); err != nil || s.Size() != 16 {
		t.Errorf("Append after reopen: got size %d, %v; want 16, nil", s.Size(), err)
	}
}
