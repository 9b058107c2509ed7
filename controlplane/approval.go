package controlplane

import (
	"context"
	"net/http"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

// approvalsAPI is the approvals area of the API: an approver's signed
// approval of a pending intent.
type approvalsAPI struct{ srv *Server }

// routes registers the approvals area.
func (ep approvalsAPI) routes(mux *routeMux) {
	mux.HandleFunc("POST /v1/approvals", ep.handleApproval)
}

func (ep approvalsAPI) handleApproval(w http.ResponseWriter, r *http.Request) {
	limit := ep.srv.verifier.Config().MaxBytes
	leave, ok := ep.srv.enter(w, r, limit)
	if !ok {
		return
	}
	id, aerr := func() (string, *apiError) {
		defer leave()
		body, aerr := readBody(w, r, limit)
		if aerr != nil {
			return "", aerr
		}
		return ep.approve(r.Context(), body)
	}()
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	if in, ok := ep.srv.reads.Intent(id); ok {
		approver := ""
		if in.Approval != nil {
			approver = in.Approval.Approver
		}
		ep.srv.log.Info("approval recorded", "intent_id", in.ID, "tenant", in.Tenant, "approver", approver, "state", in.State)
	}
	ep.srv.answer(w, r, id, 0)
}

// approve verifies an approval of a pending intent (PROTOCOL.md §3), asks
// policy whether the approver may approve it, and proposes it; the FSM consumes
// the nonce, so of two uses of one approval exactly one succeeds. As an
// admission, it is checked again if approver keys, tools or the policy set
// change in the log before its entry (recheck).
func (ep approvalsAPI) approve(ctx context.Context, raw []byte) (string, *apiError) {
	return ep.srv.recheck("approval", func() (string, *apiError) { return ep.approveOnce(ctx, raw) })
}

func (ep approvalsAPI) approveOnce(ctx context.Context, raw []byte) (string, *apiError) {
	at := ep.srv.checkIndex()
	a0, err := ep.srv.verifier.AuthenticateApproval(raw, approverKeys{ep.srv.reads})
	if err != nil {
		return "", fromProtocol(err)
	}
	rec, ok := ep.srv.reads.Intent(a0.IntentID)
	if !ok {
		return "", refusal(protocol.CodeNotFound, "no intent "+a0.IntentID)
	}
	in, err := protocol.DecodeIntent(rec.Raw, ep.srv.verifier.Config().MaxBytes)
	if err != nil {
		return "", refusal(protocol.CodeInternal, "stored intent does not decode")
	}
	a, err := ep.srv.verifier.VerifyApproval(raw, in, approverKeys{ep.srv.reads}, nonces{ep.srv.reads}, ep.approvalPolicy())
	if err != nil {
		return "", fromProtocol(err)
	}
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		return "", fromProtocol(err)
	}
	expires, _ := protocol.ParseTime(a.ExpiresAt)
	// Checked approvals have a type of their own, which older servers
	// cannot apply without the check (fsm.MsgApproveChecked).
	t := fsm.MsgApprove
	if at != 0 {
		t = fsm.MsgApproveChecked
	}
	ep.srv.proposing(t)
	res, err := ep.srv.apply(ctx, t, &fsm.Approve{
		At: ep.srv.now(), Approval: canon, ID: a.ID, IntentID: a.IntentID, Tenant: a.Tenant, Approver: a.Approver,
		Decision: a.Decision, Nonce: a.Nonce, NonceExpiresAt: expires, Hash: protocol.HashBytes(canon), CheckIndex: at,
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
func (ep approvalsAPI) approvalPolicy() protocol.ApprovalPolicy {
	return approvalPolicyFunc(func(in *protocol.Intent, a *protocol.Approval) bool {
		tool, ok := ep.srv.catalog.tool(in.Tool)
		if !ok {
			return false
		}
		req, err := policy.NewApproveRequest(in, a, policyTool(tool))
		if err != nil {
			return false
		}
		return ep.srv.catalog.policySet().Approve(req).Allow
	})
}

type approvalPolicyFunc func(*protocol.Intent, *protocol.Approval) bool

func (f approvalPolicyFunc) MayApprove(in *protocol.Intent, a *protocol.Approval) bool {
	return f(in, a)
}

// approveWith applies the approval sent with a submission: it must be for
// that intent, and it is applied only while the intent waits for one — an
// intent that needs none, or already has its outcome, is answered as it is.
func (ep approvalsAPI) approveWith(ctx context.Context, intentID string, raw []byte) *apiError {
	a, err := protocol.DecodeApproval(raw, ep.srv.verifier.Config().MaxBytes)
	if err != nil {
		return fromProtocol(err)
	}
	if a.IntentID != intentID {
		return refusal(protocol.CodeMalformed, "the approval in the body is for intent "+a.IntentID+", not "+intentID)
	}
	if in, ok := ep.srv.reads.Intent(intentID); !ok || in.State != fsm.StatePendingApproval {
		return nil
	}
	_, aerr := ep.approve(ctx, raw)
	if aerr != nil && aerr.code == protocol.CodeAuthorizationChanged {
		// The intent is recorded: only the approval was not.
		return refusal(aerr.code, "intent "+intentID+" is recorded and waits for approval; keys, tools or the policy set changed "+
			"while its approval was checked, every time, and the approval was not applied: send it again")
	}
	return aerr
}
