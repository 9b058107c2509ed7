package localcluster

import (
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/harness"
)

// What a test or a benchmark reads of one server, whether Start started it
// or it was started again from its configuration.

// ID is the server's id.
func ID(s *controlplane.Server) string { return harness.Of(s).ID }

// IsLeader reports whether s leads the cluster now.
func IsLeader(s *controlplane.Server) bool { return harness.Of(s).IsLeader() }

// AppliedIndex is the index of the last entry s's FSM has applied (Raft's
// own entries never reach it). A benchmark waits for every server to reach
// the leader's, so that no measurement pays for a follower still applying
// the one before.
func AppliedIndex(s *controlplane.Server) uint64 { return harness.Of(s).AppliedIndex() }

// GroupStats returns how many entries s has proposed with group commit, and
// how many commands they carried.
func GroupStats(s *controlplane.Server) (entries, commands uint64) {
	return harness.Of(s).GroupStats()
}
