package controlplane

import "time"

// yieldLeadership hands the leadership to another server while this one's
// FSM waits for disk space to write a receipt or checkpoint (fsm.OnNoSpace).
// Such a leader still appends to its Raft log and heartbeats, so the others
// would never elect another, yet it applies nothing and answers nothing:
// the cluster would wait as long as its disk stays full. It runs off the
// FSM's goroutine, one transfer at a time; the FSM asks again before each
// of its waits, so a failed transfer, or leadership won again, is retried.
func (s *Server) yieldLeadership() {
	if !s.isLeader() || !s.yielding.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.yielding.Store(false)
		began := time.Now()
		if err := s.node.Raft.LeadershipTransfer().Error(); err != nil {
			s.log.Warn("the disk is full, and the leadership could not be handed on", "err", err)
			return
		}
		s.log.Warn("the disk is full: handed the leadership on", "took", time.Since(began).Round(time.Millisecond))
	}()
}
