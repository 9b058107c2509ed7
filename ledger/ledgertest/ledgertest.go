// Package ledgertest is the conformance suite that every ledger.Store runs,
// so that the Log can rely on the contract documented on ledger.Store whatever
// keeps its data.
package ledgertest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/writhq/writ/ledger"
)

// Opener opens the store kept in dir, creating it if dir is empty. A store
// that is not durable may ignore dir. The suite closes what it opens.
type Opener func(t *testing.T, dir string) ledger.Store

// TestStore runs the contract of ledger.Store against stores from open.
func TestStore(t *testing.T, open Opener) {
	t.Run("Empty", func(t *testing.T) { testEmpty(t, open(t, t.TempDir())) })
	t.Run("AppendRead", func(t *testing.T) { testAppendRead(t, open(t, t.TempDir())) })
	t.Run("AppendWrongHashCount", func(t *testing.T) { testWrongHashCount(t, open(t, t.TempDir())) })
	t.Run("AppendCopies", func(t *testing.T) { testAppendCopies(t, open(t, t.TempDir())) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, open(t, t.TempDir())) })
	t.Run("Checkpoint", func(t *testing.T) { testCheckpoint(t, open(t, t.TempDir())) })
	t.Run("ConcurrentReads", func(t *testing.T) { testConcurrentReads(t, open(t, t.TempDir())) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, open(t, t.TempDir())) })
}

// TestDurableStore runs TestStore, then checks that a closed and reopened
// store holds exactly what was appended and set before.
func TestDurableStore(t *testing.T, open Opener) {
	TestStore(t, open)
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
}

// leaf returns the test leaf at index n; sizes vary, and leaf 3 is empty.
func leaf(n int64) []byte {
	if n == 3 {
		return []byte{}
	}
	return bytes.Repeat([]byte(fmt.Sprintf("leaf %d;", n)), int(n%7)+1)
}

// batch returns leaves [from, from+n) and the hashes a Log would store for
// them, computed with tlog against want (all hashes of leaves before from).
func batch(t *testing.T, want *[]ledger.Hash, from int64, n int) ([][]byte, []ledger.Hash) {
	t.Helper()
	r := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			out[i] = tlog.Hash((*want)[x])
		}
		return out, nil
	})
	var leaves [][]byte
	start := len(*want)
	for i := from; i < from+int64(n); i++ {
		hs, err := tlog.StoredHashes(i, leaf(i), r)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			*want = append(*want, ledger.Hash(h))
		}
		leaves = append(leaves, leaf(i))
	}
	return leaves, append([]ledger.Hash(nil), (*want)[start:]...)
}

// fill appends the batches of the given sizes and returns all stored hashes.
func fill(t *testing.T, s ledger.Store, sizes ...int) []ledger.Hash {
	t.Helper()
	var want []ledger.Hash
	for _, n := range sizes {
		leaves, hashes := batch(t, &want, s.Size(), n)
		if err := s.Append(leaves, hashes); err != nil {
			t.Fatalf("Append(%d leaves at %d): %v", n, s.Size(), err)
		}
	}
	return want
}

// checkContents reads every leaf and hash of a store of size and compares them.
func checkContents(s ledger.Store, size int64, want []ledger.Hash) error {
	leaves, err := s.ReadLeaves(0, int(size))
	if err != nil {
		return fmt.Errorf("ReadLeaves(0, %d): %v", size, err)
	}
	for i, l := range leaves {
		if !bytes.Equal(l, leaf(int64(i))) {
			return fmt.Errorf("leaf %d: got %q, want %q", i, l, leaf(int64(i)))
		}
	}
	count := tlog.StoredHashCount(size)
	indexes := make([]int64, count)
	for i := range indexes {
		indexes[i] = count - 1 - int64(i) // any order must work
	}
	got, err := s.ReadHashes(indexes)
	if err != nil {
		return fmt.Errorf("ReadHashes(%d hashes): %v", count, err)
	}
	for i, x := range indexes {
		if got[i] != want[x] {
			return fmt.Errorf("hash %d: got %s, want %s", x, got[i], want[x])
		}
	}
	return nil
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}
