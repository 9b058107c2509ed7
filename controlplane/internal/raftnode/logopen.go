package raftnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	bolt "go.etcd.io/bbolt"
)

// logStore is the log and stable store a Node runs on.
type logStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// LogStorePath is where the log store of the data directory dir is.
func LogStorePath(dir string) string { return filepath.Join(dir, "raft", "raft.db") }

// WALDir is where raft-wal kept the log of the data directory dir.
func WALDir(dir string) string { return filepath.Join(dir, "raft", "wal") }

// openLogStore opens the store cfg.LogStore names, migrating a raft-wal
// directory into a LogStore first.
func openLogStore(cfg Config, hl hclog.Logger) (logStore, error) {
	raftDir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(raftDir, 0o700); err != nil {
		return nil, err
	}
	switch cfg.LogStore {
	case LogStoreWAL:
		return openWAL(WALDir(cfg.Dir), hl)
	case LogStoreRaftBoltDB:
		return raftboltdb.New(raftboltdb.Options{
			Path:        filepath.Join(raftDir, "raft-boltdb.db"),
			BoltOptions: &bolt.Options{Timeout: time.Second},
		})
	}
	path, walDir := LogStorePath(cfg.Dir), WALDir(cfg.Dir)
	if _, err := os.Stat(walDir); err == nil {
		if _, err := os.Stat(path); err == nil {
			// A migration renamed raft.db into place and stopped before
			// moving the WAL aside: raft.db is complete.
			to, err := moveWALAside(walDir)
			if err != nil {
				return nil, err
			}
			cfg.Logger.Info("raft-wal directory moved aside after its migration", "old_log", to)
		} else if errors.Is(err, fs.ErrNotExist) {
			m, err := MigrateWAL(walDir, path)
			if err != nil {
				return nil, fmt.Errorf("%w; %s is unchanged, and the server does not start until it is migrated (writ operator migrate-log --data-dir %s says the same)", err, walDir, cfg.Dir)
			}
			cfg.Logger.Info("raft log migrated from raft-wal", "entries", m.Entries, "first", m.First, "last", m.Last,
				"stable_keys", len(m.Stable), "store", path, "old_log", m.MovedTo)
		} else {
			return nil, err
		}
	}
	return OpenLogStore(path)
}

// walStore is raft-wal with the meta store it was opened with, which the
// WAL does not close itself (its file would stay locked after Shutdown).
type walStore struct {
	*wal.WAL
	meta *metadb.BoltMetaDB
}

func openWAL(dir string, hl hclog.Logger) (*walStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithLogger(hl), wal.WithMetaStore(meta))
	if err != nil {
		meta.Close()
		return nil, fmt.Errorf("raftnode: opening the log: %w", err)
	}
	return &walStore{w, meta}, nil
}

func (s *walStore) Close() error {
	err := s.WAL.Close()
	if cerr := s.meta.Close(); err == nil {
		err = cerr
	}
	return err
}
