package policy

import (
	"fmt"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/writhq/writ/protocol"
)

// ApproveRequest asks whether an approval's approver may decide on an intent.
// Build it with NewApproveRequest; the zero value is refused.
type ApproveRequest struct {
	built bool
	req   request
}

// NewApproveRequest maps an approval of an intent onto the entity model:
// principal Writ::Approver::"<approver>", action Writ::Action::"approve",
// resource the intent's tool, and the invoke context plus principal (the
// intent's principal, as a String) and decision ("approve" or "deny").
//
// Both artifacts are expected to have passed protocol verification. Errors:
// ErrMismatch when either is nil, when the approval names another intent id
// or tenant, or when tool is not the intent's tool; ErrInput and its children
// as for NewInvokeRequest.
func NewApproveRequest(in *protocol.Intent, ap *protocol.Approval, tool Tool) (ApproveRequest, error) {
	switch {
	case in == nil || ap == nil:
		return ApproveRequest{}, fmt.Errorf("%w: no intent or no approval", ErrMismatch)
	case ap.IntentID != in.ID || ap.Tenant != in.Tenant:
		return ApproveRequest{}, fmt.Errorf("%w: approval for intent %q of tenant %q given for intent %q of tenant %q",
			ErrMismatch, ap.IntentID, ap.Tenant, in.ID, in.Tenant)
	case tool.Name != in.Tool:
		return ApproveRequest{}, fmt.Errorf("%w: tool %q given for an intent on tool %q", ErrMismatch, tool.Name, in.Tool)
	}
	ctx, err := intentContext(in, tool)
	if err != nil {
		return ApproveRequest{}, err
	}
	ctx["principal"] = cedar.String(in.Principal)
	ctx["decision"] = cedar.String(ap.Decision)
	return ApproveRequest{
		built: true,
		req:   newRequest(person(TypeApprover, ap.Approver, ap.Tenant), actionApprove, tool.entity(), ctx),
	}, nil
}

// Approve decides an ApproveRequest, for a "deny" decision as much as for an
// "approve" one: ending someone's intent is a power too. It never fails; its
// ApprovalRequired is always false. Refusing self-approval is the protocol
// layer's check; a policy may encode it as well (docs/policy.md).
func (s *Set) Approve(req ApproveRequest) Decision {
	if !req.built {
		return refused("approve request was not built with NewApproveRequest")
	}
	if s == nil {
		return refused("no policy set")
	}
	return s.authorize(req.req, false)
}
