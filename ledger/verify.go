package ledger

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// CheckInclusion checks that proof leads from leaf, at index, to the root of c.
// It does not look at signatures: use VerifyInclusion for a signed checkpoint.
// It fails with ErrIndexOutOfRange or ErrProofMismatch.
func CheckInclusion(c Checkpoint, index int64, leaf []byte, proof Proof) error {
	if index < 0 || index >= c.Size {
		return fmt.Errorf("%w: index %d, tree size %d", ErrIndexOutOfRange, index, c.Size)
	}
	err := tlog.CheckRecord(tlog.RecordProof(toTlog(proof)), c.Size, tlog.Hash(c.Root), index, tlog.Hash(LeafHash(leaf)))
	if err != nil {
		return fmt.Errorf("%w: leaf %d in tree of size %d (root %s): %v", ErrProofMismatch, index, c.Size, c.Root, err)
	}
	return nil
}

// VerifyInclusion opens the signed checkpoint with v (see OpenCheckpoint) and
// checks that leaf is at index in the tree it commits to. It returns the
// checkpoint so that callers can report the size and root they checked against.
func VerifyInclusion(v note.Verifier, signedCheckpoint []byte, index int64, leaf []byte, proof Proof) (Checkpoint, error) {
	c, err := OpenCheckpoint(signedCheckpoint, v)
	if err != nil {
		return Checkpoint{}, err
	}
	if err := CheckInclusion(c, index, leaf, proof); err != nil {
		return Checkpoint{}, err
	}
	return c, nil
}

// CheckConsistency checks that newer extends older: same origin, a size that
// does not go backwards (ErrRollback), and a consistency proof that connects the
// two roots (ErrInconsistent). Equal sizes need equal roots and an empty proof;
// a different root at the same size is a split view.
func CheckConsistency(older, newer Checkpoint, proof Proof) error {
	switch {
	case older.Origin != newer.Origin:
		return fmt.Errorf("%w: %q then %q", ErrWrongOrigin, older.Origin, newer.Origin)
	case newer.Size < older.Size:
		return fmt.Errorf("%w: size %d then %d", ErrRollback, older.Size, newer.Size)
	case older.Size == 0:
		if older.Root != EmptyRoot() || len(proof) != 0 {
			return fmt.Errorf("%w: empty tree with root %s and a %d-hash proof", ErrInconsistent, older.Root, len(proof))
		}
		return nil
	case older.Size == newer.Size:
		if older.Root != newer.Root || len(proof) != 0 {
			return fmt.Errorf("%w: two roots at size %d: %s and %s", ErrInconsistent, older.Size, older.Root, newer.Root)
		}
		return nil
	}
	err := tlog.CheckTree(tlog.TreeProof(toTlog(proof)), newer.Size, tlog.Hash(newer.Root), older.Size, tlog.Hash(older.Root))
	if err != nil {
		return fmt.Errorf("%w: size %d (root %s) to size %d (root %s): %v",
			ErrInconsistent, older.Size, older.Root, newer.Size, newer.Root, err)
	}
	return nil
}

// VerifyConsistency opens both signed checkpoints with v and checks that the
// newer one extends the older one. It returns both checkpoints.
func VerifyConsistency(v note.Verifier, older, newer []byte, proof Proof) (Checkpoint, Checkpoint, error) {
	o, err := OpenCheckpoint(older, v)
	if err != nil {
		return Checkpoint{}, Checkpoint{}, fmt.Errorf("older checkpoint: %w", err)
	}
	n, err := OpenCheckpoint(newer, v)
	if err != nil {
		return Checkpoint{}, Checkpoint{}, fmt.Errorf("newer checkpoint: %w", err)
	}
	if err := CheckConsistency(o, n, proof); err != nil {
		return Checkpoint{}, Checkpoint{}, err
	}
	return o, n, nil
}
