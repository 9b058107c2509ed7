package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/writhq/writ/ledger"
)

// vectorLog returns a log holding the vector leaves, appended one at a time
// into the given store.
func vectorLog(t *testing.T, v *ledgerVectors, store ledger.Store) *ledger.Log {
	t.Helper()
	l, err := ledger.Open(context.Background(), store, ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, leaf := range v.leaves() {
		first, err := l.Append(leaf)
		if err != nil || first != int64(i) {
			t.Fatalf("Append(leaf %d) = %d, %v; want %d, nil", i, first, err, i)
		}
	}
	return l
}

func TestVectorLeafHashes(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	for i, l := range v.Leaves {
		got := ledger.LeafHash([]byte(l.Leaf))
		if want := mustHex(t, l.LeafHash); !bytes.Equal(got[:], want) {
			t.Errorf("leaf %d: got hash %x, want %x", i, got, want)
		}
	}
}

func TestVectorRoots(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	stores := map[string]ledger.Store{"mem": ledger.NewMemStore(), "disk": newDiskStore(t, t.TempDir())}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			l := vectorLog(t, v, store)
			for size := int64(1); size <= int64(len(v.Leaves)); size++ {
				got, err := l.Root(size)
				if err != nil {
					t.Fatal(err)
				}
				if want := v.root(t, size); got.String() != want {
					t.Errorf("root at size %d: got %s, want %s", size, got, want)
				}
			}
		})
	}
}

func TestVectorInclusion(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	l := vectorLog(t, v, ledger.NewMemStore())
	in := v.Inclusion
	got, err := l.InclusionProof(in.Index, in.TreeSize)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Strings(), in.Proof) {
		t.Fatalf("inclusion proof of %d in %d: got %v, want %v", in.Index, in.TreeSize, got.Strings(), in.Proof)
	}
	want, err := ledger.ParseProof(in.Proof)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := ledger.ParseHash(v.root(t, in.TreeSize))
	c := ledger.Checkpoint{Origin: v.origin(), Size: in.TreeSize, Root: root}
	if err := ledger.CheckInclusion(c, in.Index, v.leaves()[in.Index], want); err != nil {
		t.Errorf("vector inclusion proof does not verify: %v", err)
	}
	if err := ledger.CheckInclusion(c, in.Index+1, v.leaves()[in.Index+1], want); !errors.Is(err, ledger.ErrProofMismatch) {
		t.Errorf("proof for leaf %d used for leaf %d: got %v, want ErrProofMismatch", in.Index, in.Index+1, err)
	}
}

func TestVectorConsistency(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	l := vectorLog(t, v, ledger.NewMemStore())
	cs := v.Consistency
	got, err := l.ConsistencyProof(cs.From, cs.To)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Strings(), cs.Proof) {
		t.Fatalf("consistency proof %d→%d: got %v, want %v", cs.From, cs.To, got.Strings(), cs.Proof)
	}
	want, _ := ledger.ParseProof(cs.Proof)
	from, _ := ledger.ParseHash(v.root(t, cs.From))
	to, _ := ledger.ParseHash(v.root(t, cs.To))
	older := ledger.Checkpoint{Origin: v.origin(), Size: cs.From, Root: from}
	newer := ledger.Checkpoint{Origin: v.origin(), Size: cs.To, Root: to}
	if err := ledger.CheckConsistency(older, newer, want); err != nil {
		t.Errorf("vector consistency proof does not verify: %v", err)
	}
	if err := ledger.CheckConsistency(newer, older, want); !errors.Is(err, ledger.ErrRollback) {
		t.Errorf("checkpoints swapped: got %v, want ErrRollback", err)
	}
}

func TestVectorCheckpoint(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	signer, vkey, err := ledger.NewSigner(v.origin(), v.seed(t))
	if err != nil {
		t.Fatal(err)
	}
	if vkey != v.NoteVerifierKey {
		t.Errorf("verifier key: got %q, want %q", vkey, v.NoteVerifierKey)
	}
	l := vectorLog(t, v, ledger.NewMemStore())
	signed, err := l.Publish(signer)
	if err != nil {
		t.Fatal(err)
	}
	if string(signed) != v.CheckpointNote {
		t.Errorf("checkpoint note:\ngot  %q\nwant %q", signed, v.CheckpointNote)
	}
	verifier, err := ledger.NewVerifier(v.NoteVerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ledger.OpenCheckpoint([]byte(v.CheckpointNote), verifier)
	if err != nil {
		t.Fatalf("vector checkpoint does not open: %v", err)
	}
	if c.Size != int64(len(v.Leaves)) || c.Root.String() != v.root(t, c.Size) {
		t.Errorf("checkpoint: got size %d root %s, want %d %s", c.Size, c.Root, len(v.Leaves), v.root(t, int64(len(v.Leaves))))
	}
	_, err = ledger.OpenCheckpoint([]byte(v.TamperedCheckpoint), verifier)
	if !errors.Is(err, ledger.ErrBadSignature) {
		t.Errorf("tampered checkpoint: got %v, want ErrBadSignature", err)
	}
}
