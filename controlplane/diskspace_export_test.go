package controlplane

import "time"

// SetDiskFull makes s's disk count as full, as while its FSM waits for
// space to write (without the leader's yield), until it is called with
// false. A Raft append that succeeds does not end it, as it ends a full log.
func SetDiskFull(s *Server, full bool) {
	if !full {
		s.space.fsmWait.Store(0)
		return
	}
	s.space.fsmWaits()
	s.space.fsmWait.Store(time.Now().Add(time.Hour).UnixNano())
}
