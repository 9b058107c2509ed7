package ledger

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Log is an append-only Merkle log over a Store: it computes the hashes that
// the store keeps, produces proofs, and signs or accepts checkpoints. Reads and
// proofs may run concurrently with one another and with Append.
//
// A Log that finds its store corrupt — on Open, or later when a leaf or a
// proof fails its own check — refuses to serve from then on: every read returns
// the same error wrapping ErrCorrupt.
type Log struct {
	store    Store
	cfg      Config
	verifier note.Verifier // nil when cfg.VerifierKey is empty

	mu     sync.Mutex // serializes Append and checkpoint changes
	latest atomic.Pointer[signedCheckpoint]
	broken atomic.Pointer[error]
}

// signedCheckpoint is a checkpoint together with the note that signs it.
type signedCheckpoint struct {
	note []byte
	cp   Checkpoint
}

// Open returns a Log over store after checking it: the stored checkpoint (its
// signature if cfg has a verifier key; the tree size and root always) and the
// newest cfg.TailCheck leaves, or every leaf if cfg.FullCheck. A store that
// fails a check is not opened: the error wraps ErrCorrupt (ErrTruncated or
// ErrCheckpointMismatch where that is the reason) and the store is left open
// for the caller to inspect or close.
func Open(ctx context.Context, store Store, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Log{store: store, cfg: cfg, verifier: cfg.verifier()}
	signed, err := store.Checkpoint()
	if err != nil {
		return nil, err
	}
	if signed != nil {
		c, err := l.checkCheckpoint(signed)
		if err != nil {
			return nil, fmt.Errorf("ledger: stored checkpoint: %w", err)
		}
		l.latest.Store(&signedCheckpoint{note: signed, cp: c})
	}
	from, size := int64(0), store.Size()
	if !cfg.FullCheck {
		from = max(0, size-int64(cfg.TailCheck))
	}
	if err := l.checkLeaves(ctx, from, size); err != nil {
		return nil, err
	}
	return l, nil
}

// Sync makes every appended leaf durable, for a store that defers that to an
// explicit sync (a DiskStore with DiskConfig.DeferSync); for other stores it
// does nothing. It may run concurrently with Append and with reads.
func (l *Log) Sync() error {
	if s, ok := l.store.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}

// Size returns the number of leaves in the log.
func (l *Log) Size() int64 { return l.store.Size() }

// Close closes the store.
func (l *Log) Close() error { return l.store.Close() }

// Append adds leaves to the log, durably if the store is (with DeferSync, at
// the next Sync), and returns the index of the first. Leaves are opaque bytes; Writ appends JCS(receipt).
func (l *Log) Append(leaves ...[]byte) (int64, error) {
	if err := l.err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.store.Size()
	r := &pendingReader{store: l.store, base: tlog.StoredHashCount(size)}
	for i, leaf := range leaves {
		hs, err := tlog.StoredHashes(size+int64(i), leaf, r)
		if err != nil {
			return 0, fmt.Errorf("ledger: hashing leaf %d: %w", size+int64(i), err)
		}
		r.pending = append(r.pending, hs...)
	}
	if err := l.store.Append(leaves, fromTlog(r.pending)); err != nil {
		return 0, err
	}
	return size, nil
}

// pendingReader reads hashes from the store, and those of leaves being
// appended from the batch not yet stored.
type pendingReader struct {
	store   Store
	base    int64 // StoredHashCount of the stored leaves
	pending []tlog.Hash
}

func (r *pendingReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var stored []int64
	for i, x := range indexes {
		if x >= r.base {
			out[i] = r.pending[x-r.base]
		} else {
			stored = append(stored, x)
		}
	}
	if len(stored) == 0 {
		return out, nil
	}
	hs, err := r.store.ReadHashes(stored)
	if err != nil {
		return nil, err
	}
	for i, x := range indexes {
		if x < r.base {
			out[i], hs = tlog.Hash(hs[0]), hs[1:]
		}
	}
	return out, nil
}

// hashReader adapts a Store to tlog.HashReader.
type hashReader struct{ store Store }

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	hs, err := r.store.ReadHashes(indexes)
	if err != nil {
		return nil, err
	}
	return toTlog(hs), nil
}

// Root returns the root hash of the first size leaves.
func (l *Log) Root(size int64) (Hash, error) {
	if size < 0 || size > l.store.Size() {
		return Hash{}, fmt.Errorf("%w: tree size %d, log size %d", ErrIndexOutOfRange, size, l.store.Size())
	}
	h, err := tlog.TreeHash(size, hashReader{l.store})
	return Hash(h), err
}

// err returns the error that broke the log, if any.
func (l *Log) err() error {
	if e := l.broken.Load(); e != nil {
		return *e
	}
	return nil
}

// fail records that the store is corrupt; the first reason is kept.
func (l *Log) fail(err error) error {
	l.broken.CompareAndSwap(nil, &err)
	return l.err()
}
