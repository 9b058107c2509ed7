package ledger

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"
)

// Publish signs a checkpoint of the whole log with s, stores it as the latest
// and returns the signed note. The signer's name is the log's origin.
func (l *Log) Publish(s note.Signer) ([]byte, error) {
	if err := l.err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.store.Size()
	root, err := l.Root(size)
	if err != nil {
		return nil, l.failIfCorrupt(err)
	}
	signed, err := SignCheckpoint(Checkpoint{Origin: s.Name(), Size: size, Root: root}, s)
	if err != nil {
		return nil, err
	}
	if err := l.setLatest(signed); err != nil {
		return nil, err
	}
	return signed, nil
}

// SetCheckpoint makes a checkpoint signed elsewhere the latest, as a replica
// does with the checkpoint its leader published through Raft. It must verify
// with the log's verifier key (if configured), come from the same origin, not
// be smaller than the current latest (ErrRollback), not be ahead of the log
// (ErrIndexOutOfRange), and commit to exactly this log's root at its size; a
// different root means this replica disagrees with a signed checkpoint and
// breaks the log (ErrCheckpointMismatch).
func (l *Log) SetCheckpoint(signed []byte) error {
	if err := l.err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.setLatest(signed)
}

// setLatest checks signed against the tree and the previous checkpoint, then
// stores it. Called with mu held.
func (l *Log) setLatest(signed []byte) error {
	c, err := l.openCheckpoint(signed)
	if err != nil {
		return err
	}
	if c.Size > l.store.Size() {
		return fmt.Errorf("%w: checkpoint size %d, log size %d", ErrIndexOutOfRange, c.Size, l.store.Size())
	}
	if prev := l.latest.Load(); prev != nil {
		if c.Origin != prev.cp.Origin {
			return fmt.Errorf("%w: checkpoint for %q, log is %q", ErrWrongOrigin, c.Origin, prev.cp.Origin)
		}
		if c.Size < prev.cp.Size {
			return fmt.Errorf("%w: size %d after %d", ErrRollback, c.Size, prev.cp.Size)
		}
	}
	if err := l.checkTree(c); err != nil {
		return l.failIfCorrupt(err)
	}
	if err := l.store.SetCheckpoint(signed); err != nil {
		return err
	}
	l.latest.Store(&signedCheckpoint{note: signed, cp: c})
	return nil
}

// Latest returns the latest checkpoint and its signed note, or ok false if
// none has been published or set.
func (l *Log) Latest() (c Checkpoint, signed []byte, ok bool) {
	latest := l.latest.Load()
	if latest == nil {
		return Checkpoint{}, nil, false
	}
	return latest.cp, latest.note, true
}
