package controlplane

import (
	"context"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

// approve verifies an approval of a pending intent (PROTOCOL.md §3), asks
// policy whether the approver may approve it, and proposes it; the FSM consumes
// the nonce, so of two uses of one approval exactly one succeeds.
func (s *Server) approve(ctx context.Context, raw []byte) (string, *apiError) {
	a0, err := s.verifier.AuthenticateApproval(raw, approverKeys{s.fsm})
	if err != nil {
		return "", fromProtocol(err)
	}
	rec, ok := s.fsm.Intent(a0.IntentID)
	if !ok {
		return "", refusal(protocol.CodeNotFound, "no intent "+a0.IntentID)
	}
	in, err := protocol.DecodeIntent(rec.Raw, s.verifier.Config().MaxBytes)
	if err != nil {
		return "", refusal(protocol.CodeInternal, "stored intent does not decode")
	}
	a, err := s.verifier.VerifyApproval(raw, in, approverKeys{s.fsm}, nonces{s.fsm}, s.approvalPolicy())
	if err != nil {
		return "", fromProtocol(err)
	}
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		return "", fromProtocol(err)
	}
	expires, _ := protocol.ParseTime(a.ExpiresAt)
	res, err := s.apply(ctx, fsm.MsgApprove, &fsm.Approve{
		At: s.now(), Approval: canon, ID: a.ID, IntentID: a.IntentID, Tenant: a.Tenant, Approver: a.Approver,
		Decision: a.Decision, Nonce: a.Nonce, NonceExpiresAt: expires, Hash: protocol.HashBytes(canon),
	})
	if err != nil {
		return "", raftError(err)
	}
	if res.Err != nil {
		return "", refusal(res.Err.Code, res.Err.Message)
	}
	return a.IntentID, nil
}

// approvalPolicy asks the Cedar `approve` action whether an approver may
// decide on an intent. An unknown tool or a request that cannot be built
// refuses.
func (s *Server) approvalPolicy() protocol.ApprovalPolicy {
	return approvalPolicyFunc(func(in *protocol.Intent, a *protocol.Approval) bool {
		tool, ok := s.catalog.tool(in.Tool)
		if !ok {
			return false
		}
		req, err := policy.NewApproveRequest(in, a, policyTool(tool))
		if err != nil {
			return false
		}
		return s.catalog.policySet().Approve(req).Allow
	})
}

type approvalPolicyFunc func(*protocol.Intent, *protocol.Approval) bool

func (f approvalPolicyFunc) MayApprove(in *protocol.Intent, a *protocol.Approval) bool {
	return f(in, a)
}

// approveWith applies the approval sent with a submission: it must be for
// that intent, and it is applied only while the intent waits for one — an
// intent that needs none, or already has its outcome, is answered as it is.
func (s *Server) approveWith(ctx context.Context, intentID string, raw []byte) *apiError {
	a, err := protocol.DecodeApproval(raw, s.verifier.Config().MaxBytes)
	if err != nil {
		return fromProtocol(err)
	}
	if a.IntentID != intentID {
		return refusal(protocol.CodeMalformed, "the approval in the body is for intent "+a.IntentID+", not "+intentID)
	}
	if in, ok := s.fsm.Intent(intentID); !ok || in.State != fsm.StatePendingApproval {
		return nil
	}
	_, aerr := s.approve(ctx, raw)
	return aerr
}
