package ledger

// Store holds the leaves of a log and the hashes of its Merkle tree, so that
// the tree never has to be recomputed from the leaves and never has to fit in
// memory. The Log decides what is stored; a Store only keeps it faithfully.
//
// Hashes are addressed by the stored-hash index of golang.org/x/mod/sumdb/tlog
// (StoredHashIndex): the hashes for leaf n are exactly the ones tlog.StoredHashes
// returns for n, and a store of size N holds tlog.StoredHashCount(N) hashes.
//
// Concurrency: Append, SetCheckpoint and Close are called by one goroutine at a
// time. Size, ReadLeaves, ReadHashes and Checkpoint MAY be called concurrently
// with each other and with Append, and MUST then see either the store before an
// Append or after it, never a part of one.
//
// Missing data: reading a leaf at or past Size, or a hash at or past
// StoredHashCount(Size), MUST fail with an error wrapping ErrNotFound. Data that
// a store finds damaged MUST be reported with an error wrapping ErrCorrupt,
// never returned as if it were good. After Close every method that returns an
// error fails with ErrClosed. The conformance suite in package ledgertest
// checks all of this.
type Store interface {
	// Size returns the number of leaves appended so far.
	Size() int64

	// Append adds leaves at positions Size() onwards with their stored hashes,
	// in index order: len(hashes) is StoredHashCount(Size()+len(leaves)) minus
	// StoredHashCount(Size()). It is all or nothing, and durable when it
	// returns for a store that is durable at all, unless the store was told
	// to defer that to an explicit sync (DiskConfig.DeferSync). The store
	// keeps its own copy.
	Append(leaves [][]byte, hashes []Hash) error

	// ReadLeaves returns the n leaves starting at index start. The caller
	// must not modify them.
	ReadLeaves(start int64, n int) ([][]byte, error)

	// ReadHashes returns the hashes at the given stored-hash indexes, in the
	// order asked for. It implements tlog.HashReader once converted.
	ReadHashes(indexes []int64) ([]Hash, error)

	// SetCheckpoint replaces the stored latest signed checkpoint, durably,
	// and never before the leaves appended so far are durable.
	SetCheckpoint(signed []byte) error

	// Checkpoint returns the latest signed checkpoint, or nil with a nil error
	// if none was ever set.
	Checkpoint() ([]byte, error)

	// Close releases the store's resources.
	Close() error
}
