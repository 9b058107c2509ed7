package controlplane

import (
	"context"

	"github.com/writhq/writ/controlplane/internal/fsm"
)

// ConfigOf is the configuration s was made with, to start it again.
func ConfigOf(s *Server) Config { return s.cfg }

// SnapshotNow makes s take a Raft snapshot of its FSM.
func SnapshotNow(s *Server) error { return s.node.Raft.Snapshot().Error() }

// LocalNodeView is s's own (possibly lagging) view of a node's status and server.
func LocalNodeView(s *Server, id string) (status, server string, ok bool) {
	var n fsm.Node
	n, ok = s.reads.Node(id)
	return n.Status, n.Server, ok
}

// CloseAsCrash stops s without the snapshot a graceful stop takes, as after
// a crash: its next start replays the log since its last snapshot.
func CloseAsCrash(s *Server) error {
	s.noStopSnapshot = true
	return s.Close(context.Background())
}
