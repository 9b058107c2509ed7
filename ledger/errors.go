package ledger

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Callers test them with errors.Is; the
// functions wrap them with the details (index, sizes, file names) that make the
// message precise. Errors about stored data all wrap ErrCorrupt, so a server can
// refuse to serve on any of them with one check.
var (
	// ErrMalformedHash: a hash is not standard base64 of 32 bytes.
	ErrMalformedHash = errors.New("ledger: malformed hash")
	// ErrMalformedProof: a proof is not a list of well-formed hashes.
	ErrMalformedProof = errors.New("ledger: malformed proof")
	// ErrMalformedCheckpoint: a checkpoint or its signed note cannot be parsed.
	ErrMalformedCheckpoint = errors.New("ledger: malformed checkpoint")
	// ErrMalformedBundle: a bundle or receipt proof document is structurally wrong.
	ErrMalformedBundle = errors.New("ledger: malformed bundle")
	// ErrBadKey: a signer seed or verifier key cannot be used.
	ErrBadKey = errors.New("ledger: bad key")
	// ErrUnknownKey: the checkpoint carries no signature by the given key.
	ErrUnknownKey = errors.New("ledger: checkpoint not signed by this key")
	// ErrBadSignature: the checkpoint carries a signature by the given key that
	// does not verify, so its text was changed after signing.
	ErrBadSignature = errors.New("ledger: bad checkpoint signature")
	// ErrWrongOrigin: the checkpoint names a different log than the key.
	ErrWrongOrigin = errors.New("ledger: wrong checkpoint origin")
	// ErrIndexOutOfRange: a leaf index is not below the tree size.
	ErrIndexOutOfRange = errors.New("ledger: index out of range")
	// ErrProofMismatch: an inclusion proof does not lead from the leaf to the
	// checkpoint's root.
	ErrProofMismatch = errors.New("ledger: inclusion proof does not match checkpoint")
	// ErrInconsistent: two checkpoints are not consistent: the newer one does
	// not extend the older one (a split view, or a rewritten history).
	ErrInconsistent = errors.New("ledger: checkpoints are not consistent")
	// ErrRollback: the newer checkpoint is smaller than the older one.
	ErrRollback = fmt.Errorf("%w: tree size went backwards", ErrInconsistent)
	// ErrUntrustedKey: a bundle names a different verifier key than the trusted one.
	ErrUntrustedKey = errors.New("ledger: bundle key is not the trusted key")
	// ErrIndexMismatch: a receipt's own "index" differs from the proved index.
	ErrIndexMismatch = errors.New("ledger: receipt index differs from proof index")

	// ErrNotFound: the store does not hold the requested leaf or hash.
	ErrNotFound = errors.New("ledger: not found")
	// ErrClosed: the store or log was used after Close.
	ErrClosed = errors.New("ledger: closed")
	// ErrSyncFailed: an fsync (or the head's write) failed, so the kernel
	// may have dropped pages it could not write; the store takes no more
	// appends until it is opened again.
	ErrSyncFailed = errors.New("ledger: an fsync failed, so the store takes no more appends")
	// ErrCorrupt: stored data fails verification against its own hashes or a
	// signed checkpoint. A log that returns it must not serve.
	ErrCorrupt = errors.New("ledger: store is corrupt")
	// ErrTruncated: a store file is shorter than the store's committed size.
	ErrTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)
	// ErrCheckpointMismatch: the stored tree disagrees with a checkpoint the
	// store itself signed (different root, or fewer leaves than it commits to).
	ErrCheckpointMismatch = fmt.Errorf("%w: disagrees with its signed checkpoint", ErrCorrupt)
)

// LeafError locates a failure to one leaf, so that a bundle or scrub report can
// say which receipt failed and why. Err is one of the errors above.
type LeafError struct {
	Index int64 // leaf index in the log
	Err   error
}

func (e *LeafError) Error() string { return fmt.Sprintf("leaf %d: %v", e.Index, e.Err) }

// Unwrap returns the underlying error.
func (e *LeafError) Unwrap() error { return e.Err }
