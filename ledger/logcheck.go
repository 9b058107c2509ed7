package ledger

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// scrubChunk is how many leaves a check reads at a time.
const scrubChunk = 4096

// Scrub recomputes every stored hash from the leaves and compares it with what
// the store holds, and checks the tree against the latest checkpoint. Its cost
// is proportional to the size of the log (one pass over all leaf bytes); run it
// in the background or from an operator command. A failure breaks the log.
func (l *Log) Scrub(ctx context.Context) error {
	if c := l.latest.Load(); c != nil {
		if _, err := l.checkCheckpoint(c.note); err != nil {
			return l.fail(err)
		}
	}
	return l.checkLeaves(ctx, 0, l.store.Size())
}

// checkLeaves rehashes leaves [from, to) and compares, for each, the hashes
// tlog stores for it — the leaf hash and the interior nodes it completes —
// with the stored ones. Interior hashes are recomputed from stored children,
// so a check from 0 verifies every stored hash.
func (l *Log) checkLeaves(ctx context.Context, from, to int64) error {
	for lo := from; lo < to; lo += scrubChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(to, lo+scrubChunk)
		leaves, err := l.store.ReadLeaves(lo, int(hi-lo))
		if err != nil {
			return l.fail(fmt.Errorf("ledger: reading leaves [%d, %d): %w", lo, hi, err))
		}
		base := tlog.StoredHashCount(lo)
		indexes := make([]int64, tlog.StoredHashCount(hi)-base)
		for i := range indexes {
			indexes[i] = base + int64(i)
		}
		stored, err := l.store.ReadHashes(indexes)
		if err != nil {
			return l.fail(fmt.Errorf("ledger: reading hashes of leaves [%d, %d): %w", lo, hi, err))
		}
		// Hashes of this chunk's earlier leaves were compared before they are
		// needed as children, so they are read from stored, not the store again.
		r := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(indexes))
			for i, x := range indexes {
				if x >= base {
					out[i] = tlog.Hash(stored[x-base])
					continue
				}
				hs, err := l.store.ReadHashes([]int64{x})
				if err != nil {
					return nil, err
				}
				out[i] = tlog.Hash(hs[0])
			}
			return out, nil
		})
		for i, leaf := range leaves {
			n := lo + int64(i)
			want, err := tlog.StoredHashes(n, leaf, r)
			if err != nil {
				return l.fail(fmt.Errorf("ledger: rehashing leaf %d: %w", n, err))
			}
			at := tlog.StoredHashCount(n) - base
			for j, h := range want {
				if Hash(h) == stored[at+int64(j)] {
					continue
				}
				what := "leaf bytes do not match the stored leaf hash"
				if j > 0 {
					what = fmt.Sprintf("the stored hash of the subtree of %d leaves ending here does not match its children", 1<<j)
				}
				return l.fail(&LeafError{Index: n, Err: fmt.Errorf("%w: %s", ErrCorrupt, what)})
			}
		}
	}
	return nil
}

// checkCheckpoint parses a signed checkpoint (verifying its signature when the
// log has a verifier key) and checks that the tree agrees with it.
func (l *Log) checkCheckpoint(signed []byte) (Checkpoint, error) {
	c, err := l.openCheckpoint(signed)
	if err != nil {
		return Checkpoint{}, err
	}
	return c, l.checkTree(c)
}

// checkTree checks that the stored tree has c's root at c's size.
func (l *Log) checkTree(c Checkpoint) error {
	size := l.store.Size()
	if c.Size > size {
		return fmt.Errorf("%w: checkpoint commits to %d leaves but the store holds %d: leaves were lost",
			ErrCheckpointMismatch, c.Size, size)
	}
	root, err := l.Root(c.Size)
	if err != nil {
		return fmt.Errorf("%w: root at size %d: %v", ErrCorrupt, c.Size, err)
	}
	if root != c.Root {
		return fmt.Errorf("%w: stored tree of size %d has root %s, checkpoint says %s",
			ErrCheckpointMismatch, c.Size, root, c.Root)
	}
	return nil
}

// openCheckpoint verifies the signature when the log has a verifier key and
// otherwise only reads the checkpoint out of the note.
func (l *Log) openCheckpoint(signed []byte) (Checkpoint, error) {
	if l.verifier != nil {
		return OpenCheckpoint(signed, l.verifier)
	}
	_, err := note.Open(signed, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if !errors.As(err, &unverified) {
		return Checkpoint{}, fmt.Errorf("%w: note: %v", ErrMalformedCheckpoint, err)
	}
	return ParseCheckpoint([]byte(unverified.Note.Text))
}
