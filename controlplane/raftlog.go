package controlplane

import (
	"fmt"
	"os"

	"github.com/writhq/writ/controlplane/internal/raftnode"
)

// RaftLogMigration says what MigrateRaftLog copied.
type RaftLogMigration = raftnode.Migration

// MigrateRaftLog migrates the Raft log of the data directory dataDir from
// raft-wal (DIR/raft/wal) into the log store servers run on
// (DIR/raft/raft.db), as a server does when it starts: atomically, and
// moving the raft-wal directory aside once done. It refuses, changing
// nothing, a directory without a raft-wal log, one already migrated, one a
// running server holds, and one whose entries cannot all be read
// (raftnode.ErrMigrate).
func MigrateRaftLog(dataDir string) (RaftLogMigration, error) {
	walDir, dst := raftnode.WALDir(dataDir), raftnode.LogStorePath(dataDir)
	if _, err := os.Stat(walDir); err != nil {
		return RaftLogMigration{}, fmt.Errorf("no raft-wal log to migrate in %s: %w", dataDir, err)
	}
	return raftnode.MigrateWAL(walDir, dst)
}
