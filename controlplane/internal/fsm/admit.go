package fsm

import (
	"github.com/writhq/writ/protocol"
)

// applyAdmit records an intent exactly once. The same idempotency key with the
// same payload returns the original intent; with another payload, or an intent
// id already used, it is refused. Every authenticated attempt is recorded with
// its outcome. An intent that policy decided on — allowed or denied — binds its
// idempotency key, so that repeats get the same answer; an intent rejected
// before any decision (bad times, an unknown tool, invalid params, no budget
// left, expired by the log's clock) does not, so that a corrected retry with
// the same key can proceed; the same attempt sent again is a repeat.
//
// An admission whose leader checked it against a state that an authorization
// change has since superseded (authz.go) is refused before anything: no
// intent, no receipt, its id and key left free, as for a write that was never
// committed. It is not an outcome of the intent but of the leader's proposal,
// which the leader makes again after checking again; the outcome then decided
// gets its receipt as any other.
func (f *FSM) applyAdmit(index uint64, c *Admit) (Result, []string) {
	if err := f.authStale(c.CheckIndex); err != nil {
		return Result{Err: err}, nil
	}
	now := f.advance(c.At)
	s := f.state
	idemKey := scoped(c.Tenant, c.IdempotencyKey)
	old, used := s.Intents[c.ID]
	same := used && old.Tenant == c.Tenant && old.IdempotencyKey == c.IdempotencyKey && old.PayloadHash == c.PayloadHash
	conflict := func() Result {
		return refuse(protocol.CodeIdempotencyConflict, "idempotency key %q was used for other params", c.IdempotencyKey)
	}
	if same && old.Error != nil && old.Error.Code == protocol.CodeIdempotencyConflict {
		return conflict(), nil // the same conflicting attempt again: the same answer, no second receipt
	}
	in := &Intent{
		ID: c.ID, Tenant: c.Tenant, Principal: c.Principal, RunID: c.RunID, Tool: c.Tool,
		PayloadHash: c.PayloadHash, IdempotencyKey: c.IdempotencyKey, Raw: c.Intent,
		AdmittedAt: now, UpdatedAt: now, ExpiresAt: c.ExpiresAt.UTC(), Index: index, Decision: c.Decision,
		Target: c.Target,
	}
	if e, ok := s.Idempotency[idemKey]; ok {
		if e.PayloadHash == c.PayloadHash {
			return Result{IntentID: e.IntentID, Duplicate: true}, nil
		}
		// An authenticated attempt, refused: it is kept, unbound, with its
		// receipt, so that sending it again gets this answer once more.
		res := conflict()
		if used {
			if !same { // its id is taken by another attempt: a receipt only
				f.recorder().recordRefused(in, res.Err)
			}
			return res, nil
		}
		in.State, in.Error, in.Unbound = StateRejected, res.Err, true
		s.Intents[in.ID] = in
		f.idx.rejected.add(now, in.ID)
		res.IntentID = in.ID
		return res, []string{in.ID}
	}
	if used {
		if same {
			return Result{IntentID: old.ID, Duplicate: true}, nil // the same attempt, sent again
		}
		res := refuse(protocol.CodeIdempotencyConflict, "intent id %q is already used", c.ID)
		f.recorder().recordRefused(in, res.Err)
		return res, nil
	}
	runKey := scoped(c.Tenant, c.RunID)
	budget := int64(0)
	if t := s.Tenants[c.Tenant]; t != nil {
		budget = t.RunBudget
	}
	switch {
	case c.Decision.Error != nil:
		in.State, in.Error = StateRejected, c.Decision.Error
		if c.Decision.Error.Code == protocol.CodePolicyDenied {
			in.State = StateDenied
		}
	case !c.Decision.Allow:
		in.State, in.Error = StateDenied, &protocol.ErrorBody{Code: protocol.CodePolicyDenied, Message: "no policy permits this intent"}
	case !in.ExpiresAt.After(now):
		// The leader's clock said it was still valid; the log's clock, which
		// never goes back, says otherwise. It is not run.
		in.State, in.Error = StateExpired, &protocol.ErrorBody{Code: protocol.CodeExpired,
			Message: "expired at " + protocol.FormatTime(in.ExpiresAt)}
	case f.lockOf(in, "") != nil:
		// Refused before it used budget or bound its key: a retry once the
		// lock is gone may proceed.
		in.State, in.Error = StateRejected, lockedError(f.lockOf(in, ""))
	case budget > 0 && s.Runs[runKey] != nil && s.Runs[runKey].Used >= budget:
		in.State, in.Error = StateRejected, &protocol.ErrorBody{Code: protocol.CodeBudgetExhausted,
			Message: "run " + c.RunID + " has used its budget of intents"}
	case !f.scheduler().anyEligible(in) && !f.scheduler().possible(in): // the index first: possible may walk the fleet
		// Refused before it used budget or bound its key: a retry once a
		// node can take it may proceed.
		in.State, in.Error = StateRejected, &protocol.ErrorBody{Code: protocol.CodeNoEligibleNode,
			Message: "no registered node may run " + in.Tool + " for this intent"}
	default:
		run := s.Runs[runKey]
		if run == nil {
			run = &Run{}
			s.Runs[runKey] = run
		}
		run.Used++
		run.LastAt = now
		f.idx.runs.add(now, runKey)
		in.State = StateQueued
		if c.Decision.ApprovalRequired {
			in.State = StatePendingApproval
		}
		f.idx.expiry.add(in.ExpiresAt, in.ID)
	}
	s.Intents[in.ID] = in
	changed := []string{in.ID}
	if in.State == StateRejected || in.State == StateExpired {
		in.Unbound = true
		f.idx.rejected.add(now, in.ID)
	} else {
		s.Idempotency[idemKey] = &IdemEntry{IntentID: in.ID, PayloadHash: c.PayloadHash, At: now}
		f.idx.idem.add(now, idemKey)
	}
	if in.State == StateQueued {
		// With no eligible node and node_wait 0 it ends rejected here, and
		// gives its key and budget back (noNode).
		changed = append(changed, f.scheduler().schedule(in, index)...)
	}
	return Result{IntentID: in.ID}, changed
}

// anyEligible reports whether a ready node may run in now, busy or not.
func (sc scheduler) anyEligible(in *Intent) bool {
	_, ok := sc.pick(in)
	return ok
}
