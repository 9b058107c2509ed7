package fsm

import (
	"github.com/writhq/writ/protocol"
)

// MsgApproveChecked is an Approve that carries the index it was checked
// against (Approve.CheckIndex, not 0): the same JSON as MsgApprove, under a
// type of its own so that a server built before approvals carried that index
// stops at the entry, as at any other it cannot read, instead of applying it
// without the check and departing from the replicas that refuse it
// authorization_changed. The FSM applies both types alike; MsgApprove
// entries (every approval written before this type existed) apply as they
// always did.
const MsgApproveChecked MsgType = 22

// applyApprove consumes an approval's nonce and moves its intent on: approve
// releases it for dispatch, deny ends it. Nonces are checked here, in log
// order, so that of two concurrent uses of one nonce exactly one succeeds.
//
// An approval checked against a state that an authorization change has since
// superseded (authz.go) is refused before anything, its nonce not consumed.
func (f *FSM) applyApprove(index uint64, c *Approve) (Result, []string) {
	if err := f.authStale(c.CheckIndex); err != nil {
		return Result{Err: err}, nil
	}
	now := f.advance(c.At)
	s := f.state
	in := s.Intents[c.IntentID]
	switch {
	case in == nil:
		return refuse(protocol.CodeNotFound, "no intent %q", c.IntentID), nil
	case in.Tenant != c.Tenant:
		return refuse(protocol.CodeApprovalMismatch, "approval is for tenant %q", c.Tenant), nil
	}
	if _, used := s.Nonces[c.Nonce]; used {
		return refuse(protocol.CodeApprovalReplayed, "approval nonce was already used"), nil
	}
	if !c.NonceExpiresAt.After(now) {
		return refuse(protocol.CodeApprovalExpired, "approval expired at %s", protocol.FormatTime(c.NonceExpiresAt)), nil
	}
	if in.State != StatePendingApproval {
		return refuse(protocol.CodeNotPending, "intent %q is %s, not waiting for approval", in.ID, in.State), nil
	}
	if !in.ExpiresAt.After(now) {
		return refuse(protocol.CodeApprovalExpired, "intent %q expired at %s", in.ID, protocol.FormatTime(in.ExpiresAt)), nil
	}
	for _, a := range in.Approvals {
		if a.Approver == c.Approver {
			return refuse(protocol.CodeApprovalDuplicate, "%s already approved intent %q: it needs %d distinct approvers", c.Approver, in.ID, in.Decision.Approvals), nil
		}
	}
	// Keep the nonce while the approval could be valid: until its expiry, but
	// never longer than the idempotency retention from now, so that no approval
	// can make the state hold a nonce (or a time) without bound.
	keep := c.NonceExpiresAt
	if limit := now.Add(f.cfg.IdempotencyRetention); keep.After(limit) {
		keep = limit
	}
	keep = keep.Add(f.cfg.NonceMargin).UTC()
	s.Nonces[c.Nonce] = keep
	f.idx.nonces.add(keep, c.Nonce)

	ref := protocol.ApprovalRef{ID: c.ID, Approver: c.Approver, Hash: c.Hash}
	in.Approval = &ref
	in.ApprovalRaw = c.Approval
	in.UpdatedAt, in.Index = now, index
	if in.Decision.Approvals > 1 {
		// Several distinct approvers: every approval (and a denial) is kept
		// for the receipt, and the intent waits until enough have approved.
		in.Approvals = append(in.Approvals, ref)
	}
	if c.Decision != protocol.DecisionApprove {
		in.State = StateDenied
		return Result{IntentID: in.ID}, []string{in.ID}
	}
	if len(in.Approvals) < in.Decision.Approvals {
		return Result{IntentID: in.ID}, []string{in.ID}
	}
	return Result{IntentID: in.ID}, append([]string{in.ID}, f.scheduler().schedule(in, index)...)
}
