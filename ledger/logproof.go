package ledger

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// Leaf returns the leaf at index after checking it against its stored hash.
// A mismatch breaks the log (see Log).
func (l *Log) Leaf(index int64) ([]byte, error) {
	if err := l.err(); err != nil {
		return nil, err
	}
	if index < 0 || index >= l.store.Size() {
		return nil, fmt.Errorf("%w: leaf %d, log size %d", ErrIndexOutOfRange, index, l.store.Size())
	}
	leaves, err := l.store.ReadLeaves(index, 1)
	if err != nil {
		return nil, l.failIfCorrupt(err)
	}
	hs, err := l.store.ReadHashes([]int64{tlog.StoredHashIndex(0, index)})
	if err != nil {
		return nil, l.failIfCorrupt(err)
	}
	if LeafHash(leaves[0]) != hs[0] {
		return nil, l.fail(&LeafError{Index: index, Err: fmt.Errorf("%w: leaf bytes do not match its stored leaf hash", ErrCorrupt)})
	}
	return leaves[0], nil
}

// InclusionProof returns the proof that leaf index is in the tree of the
// first size leaves.
func (l *Log) InclusionProof(index, size int64) (Proof, error) {
	if err := l.err(); err != nil {
		return nil, err
	}
	if size > l.store.Size() || index < 0 || index >= size {
		return nil, fmt.Errorf("%w: leaf %d in tree size %d, log size %d", ErrIndexOutOfRange, index, size, l.store.Size())
	}
	p, err := tlog.ProveRecord(size, index, hashReader{l.store})
	if err != nil {
		return nil, l.failIfCorrupt(err)
	}
	return Proof(fromTlog(p)), nil
}

// ConsistencyProof returns the proof that the tree of the first to leaves
// extends the tree of the first from leaves. It is empty when from is 0 or
// equal to to.
func (l *Log) ConsistencyProof(from, to int64) (Proof, error) {
	if err := l.err(); err != nil {
		return nil, err
	}
	if from < 0 || from > to || to > l.store.Size() {
		return nil, fmt.Errorf("%w: consistency from %d to %d, log size %d", ErrIndexOutOfRange, from, to, l.store.Size())
	}
	if from == 0 || from == to {
		return Proof{}, nil
	}
	p, err := tlog.ProveTree(to, from, hashReader{l.store})
	if err != nil {
		return nil, l.failIfCorrupt(err)
	}
	return Proof(fromTlog(p)), nil
}

// ProveReceipt returns the leaf at index with its inclusion proof against the
// latest checkpoint, in the shape of GET /v1/receipts/{index}. The result is
// checked before it is returned, so a store whose hashes disagree with the
// checkpoint breaks the log instead of serving a proof that would not verify.
// Leaves newer than the latest checkpoint are ErrIndexOutOfRange until the
// next one is published.
func (l *Log) ProveReceipt(index int64) (*ReceiptProof, error) {
	latest := l.latest.Load()
	if latest == nil {
		return nil, fmt.Errorf("%w: no checkpoint has been published", ErrNotFound)
	}
	return l.proveAgainst(latest, index)
}

// proveAgainst proves leaf index against one checkpoint, checking the result.
func (l *Log) proveAgainst(latest *signedCheckpoint, index int64) (*ReceiptProof, error) {
	c := latest.cp
	if index < 0 || index >= c.Size {
		return nil, fmt.Errorf("%w: leaf %d, latest checkpoint size %d", ErrIndexOutOfRange, index, c.Size)
	}
	leaf, err := l.Leaf(index)
	if err != nil {
		return nil, err
	}
	proof, err := l.InclusionProof(index, c.Size)
	if err != nil {
		return nil, err
	}
	if err := CheckInclusion(c, index, leaf, proof); err != nil {
		return nil, l.fail(fmt.Errorf("%w: stored hashes do not prove leaf %d against the log's own checkpoint: %v",
			ErrCheckpointMismatch, index, err))
	}
	return &ReceiptProof{Receipt: leaf, Index: index, Proof: proof, Checkpoint: string(latest.note)}, nil
}

// failIfCorrupt breaks the log when err says the store is corrupt.
func (l *Log) failIfCorrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return l.fail(err)
	}
	return err
}
