package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/controlplane"
)

func newOperator(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "operator", Short: "Maintain a stopped server's data directory"}
	cmd.AddCommand(newMigrateLog(e))
	return cmd
}

func newMigrateLog(e *env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "migrate-log --data-dir DIR",
		Short: "Migrate a stopped server's Raft log from raft-wal to the log store servers run on",
		Long: `Copy the Raft log and stable store (term, vote) of DIR/raft/wal, written by
hashicorp/raft-wal, into DIR/raft/raft.db, atomically, and move DIR/raft/wal
aside to DIR/raft/wal.migrated. A server does the same when it starts; this
command does it with the server stopped, and says what it copied or why it
cannot: a directory a running server holds, one already migrated, or one
whose entries cannot all be read is refused and left as it was.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return fmt.Errorf("--data-dir is required")
			}
			m, err := controlplane.MigrateRaftLog(dir)
			if err != nil {
				return err
			}
			if m.Entries == 0 {
				fmt.Fprintf(e.out, "migrated: no entries, %d stable values; raft-wal directory moved to %s\n", len(m.Stable), m.MovedTo)
				return nil
			}
			fmt.Fprintf(e.out, "migrated: entries %d to %d (%d), %d stable values; raft-wal directory moved to %s\n",
				m.First, m.Last, m.Entries, len(m.Stable), m.MovedTo)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "", "the server's data directory")
	return cmd
}
