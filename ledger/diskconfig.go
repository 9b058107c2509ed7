package ledger

import (
	"errors"
	"log/slog"
)

// DiskConfig configures a DiskStore.
type DiskConfig struct {
	// Dir holds the store's files; it is created if missing. One process at a
	// time may open it.
	Dir string
	// NoSync skips fsync. Appends are then not durable across a machine crash;
	// only for tests and benchmarks that measure everything else.
	NoSync bool
	// DeferSync takes fsync off Append: an append writes the leaf bytes,
	// index entries and hashes but neither fsyncs them nor moves the head
	// file, so it is readable at once and durable only after the next Sync
	// (or Close). Sync fsyncs the data and only then writes and fsyncs the
	// head. After a crash the store opens at the size of the last Sync, a
	// valid prefix; leaves appended after it are lost and must be appended
	// again. SetCheckpoint syncs first, so a stored checkpoint never commits
	// to leaves a reopened store lacks. For a store whose contents can be
	// rebuilt, as a server's receipt log is by Raft (docs/ledger.md).
	DeferSync bool
	// Logger receives the store's rare notices (a torn append cut back on
	// open). Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultDiskConfig returns the configuration for a durable store in dir.
func DefaultDiskConfig(dir string) DiskConfig { return DiskConfig{Dir: dir} }

// Validate reports a configuration that cannot work.
func (c DiskConfig) Validate() error {
	if c.Dir == "" {
		return errors.New("ledger: DiskConfig.Dir is empty")
	}
	return nil
}

func (c DiskConfig) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}
