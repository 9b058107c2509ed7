package ledger_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/writhq/writ/ledger"
)

// TestInteropTransparencyDev checks the ledger (built on x/mod/sumdb/tlog)
// against an independent RFC 6962 implementation, transparency-dev/merkle:
// its roots for every size, and every inclusion and consistency proof it
// produces, verified by the other library.
func TestInteropTransparencyDev(t *testing.T) {
	t.Parallel()
	const n = 70
	l, err := ledger.Open(context.Background(), newDiskStore(t, t.TempDir()), ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := rfc6962.DefaultHasher
	cr := (&compact.RangeFactory{Hash: h.HashChildren}).NewEmptyRange(0)
	roots := [][]byte{h.EmptyRoot()}
	var leafHashes [][]byte
	for i := range n {
		leaf := bytes.Repeat([]byte(fmt.Sprintf(`{"index":%d}`, i)), i%4)
		if _, err := l.Append(leaf); err != nil {
			t.Fatal(err)
		}
		leafHashes = append(leafHashes, h.HashLeaf(leaf))
		if err := cr.Append(h.HashLeaf(leaf), nil); err != nil {
			t.Fatal(err)
		}
		root, err := cr.GetRootHash(nil)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
	}
	for size := uint64(0); size <= n; size++ {
		got, err := l.Root(int64(size))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:], roots[size]) {
			t.Fatalf("root at size %d: got %x, transparency-dev says %x", size, got, roots[size])
		}
		for index := uint64(0); index < size; index++ {
			p, err := l.InclusionProof(int64(index), int64(size))
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyInclusion(h, index, size, leafHashes[index], raw(p), roots[size]); err != nil {
				t.Errorf("inclusion of %d in %d does not verify with transparency-dev: %v", index, size, err)
			}
		}
		for from := uint64(0); from <= size; from++ {
			p, err := l.ConsistencyProof(int64(from), int64(size))
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyConsistency(h, from, size, raw(p), roots[from], roots[size]); err != nil {
				t.Errorf("consistency %d→%d does not verify with transparency-dev: %v", from, size, err)
			}
		}
	}
}

func raw(p ledger.Proof) [][]byte {
	out := make([][]byte, len(p))
	for i := range p {
		out[i] = p[i][:]
	}
	return out
}
