package controlplane

import (
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
)

// RoutePatterns returns every route s serves: the API's, then the
// dashboard's.
func RoutePatterns(s *Server) []string {
	return append(s.mux.Patterns(), s.dash.Routes()...)
}

// SetRaftTimeouts sets Raft's heartbeat and election timeouts and its leader
// lease for the servers of c (Config.raftTimeouts).
func SetRaftTimeouts(c *Config, d time.Duration) { c.raftTimeouts = d }

// YieldLeadership makes s hand the leadership on, as when its FSM waits for
// disk space.
func YieldLeadership(s *Server) { s.yieldLeadership() }

// Tick runs the leader's tick once, as its ticker does, and reports whether
// it proposed an entry (else nothing was due).
func Tick(s *Server) bool {
	idle := s.ticksIdle.Load()
	s.tick()
	return s.ticksIdle.Load() == idle
}

// RaftBarrier commits an entry of Raft's own (a barrier), which the FSM does
// not apply.
func RaftBarrier(s *Server) error { return s.node.Raft.Barrier(10 * time.Second).Error() }

// BeforePropose sets a function run between an admission's or an approval's
// check and its proposal, given the command's type ("admit_binary",
// "approve_checked"); nil removes it.
func BeforePropose(s *Server, f func(cmd string)) {
	if f == nil {
		s.beforePropose.Store(nil)
		return
	}
	h := func(t fsm.MsgType) { f(t.String()) }
	s.beforePropose.Store(&h)
}

// IntentState returns the state of an intent in s's own FSM ("" when s has
// none), and AuthIndex its FSM's last authorization change: what a replica
// holds, not what a read forwarded to the leader answers.
func IntentState(s *Server, id string) string {
	in, ok := s.reads.Intent(id)
	if !ok {
		return ""
	}
	return in.State
}

func AuthIndex(s *Server) uint64 { return s.reads.AuthIndex() }
