package controlplane

import (
	"strconv"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// authAttempts bounds how many times the leader checks and proposes one
// admission or approval that the FSM refuses authorization_changed: keys,
// a tool or the policy set changed in the log after the state it was checked
// against (fsm/authz.go). Each attempt checks against a state that includes
// every change before the refused entry, so only changes committed during
// each attempt's proposal overtake it again.
const authAttempts = 4

// checkIndex is the FSM index a check made from now on is made against at
// least: the applied index, read before any lookup, which only grows, so
// every state the check reads is at or after it. A change applied after it
// and before the command's entry refuses the command, even one the check
// happened to see — refusing too often is safe, the next attempt checks again.
func (s *Server) checkIndex() uint64 { return s.reads.Index() }

// recheck runs attempt — check against the FSM, then propose — again while
// the FSM refuses it authorization_changed, at most authAttempts times, and
// then answers that code (503, with Retry-After): nothing was recorded, and
// the same request may be sent again.
func (s *Server) recheck(what string, attempt func() (string, *apiError)) (string, *apiError) {
	for n := 1; ; n++ {
		id, aerr := attempt()
		if aerr == nil || aerr.code != protocol.CodeAuthorizationChanged {
			return id, aerr
		}
		s.metrics.rechecks.Inc()
		if n == authAttempts {
			s.log.Warn("authorization changed under every attempt; refused", "what", what, "attempts", n)
			return "", refusal(protocol.CodeAuthorizationChanged, "keys, tools or the policy set changed while the "+what+
				" was checked, "+strconv.Itoa(n)+" times; nothing was recorded: send it again")
		}
		s.log.Debug("authorization changed under a check; checking again", "what", what, "attempt", n, "fsm", aerr.msg)
	}
}

// proposing runs the test hook set between a check and its proposal.
func (s *Server) proposing(t fsm.MsgType) {
	if h := s.beforePropose.Load(); h != nil {
		(*h)(t)
	}
}
