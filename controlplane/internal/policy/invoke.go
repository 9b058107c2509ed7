package policy

import (
	"fmt"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/writhq/writ/protocol"
)

// InvokeRequest asks whether an intent's principal may invoke its tool. Build
// it with NewInvokeRequest; the zero value is refused. It holds no reference
// to the intent, and may be evaluated against any number of sets,
// concurrently.
type InvokeRequest struct {
	built bool
	req   request
}

// request is what Cedar is asked, built once by a constructor.
type request struct {
	entities cedar.EntityMap
	cedar    cedar.Request
}

func newRequest(principal cedar.Entity, action cedar.EntityUID, tool cedar.Entity, ctx cedar.RecordMap) request {
	return request{
		entities: cedar.EntityMap{principal.UID: principal, tool.UID: tool},
		cedar: cedar.Request{
			Principal: principal.UID,
			Action:    action,
			Resource:  tool.UID,
			Context:   cedar.NewRecord(ctx),
		},
	}
}

// NewInvokeRequest maps an intent and the manifest of its tool onto the entity
// model: principal Writ::Agent::"<principal>", action Writ::Action::"invoke",
// resource Writ::Tool::"<tool>", and the context of docs/policy.md.
//
// The intent is expected to have passed protocol verification; only what the
// mapping itself needs is checked. Errors: ErrMismatch when in is nil or tool
// is not the intent's tool; ErrInput and its children when the params or the
// intent context cannot be mapped (not an object, deeper than MaxDepth, more
// than MaxValues values together).
func NewInvokeRequest(in *protocol.Intent, tool Tool) (InvokeRequest, error) {
	if in == nil {
		return InvokeRequest{}, fmt.Errorf("%w: no intent", ErrMismatch)
	}
	if tool.Name != in.Tool {
		return InvokeRequest{}, fmt.Errorf("%w: tool %q given for an intent on tool %q", ErrMismatch, tool.Name, in.Tool)
	}
	ctx, err := intentContext(in, tool)
	if err != nil {
		return InvokeRequest{}, err
	}
	return InvokeRequest{
		built: true,
		req:   newRequest(person(TypeAgent, in.Principal, in.Tenant), actionInvoke, tool.entity(), ctx),
	}, nil
}

// Invoke decides an InvokeRequest. It never fails: a request that could not
// be decided, or a nil Set, is denied, with the reason in Decision.Errors. It
// is deterministic: the same request and policy text give the same Decision.
func (s *Set) Invoke(req InvokeRequest) Decision {
	if !req.built {
		return refused("invoke request was not built with NewInvokeRequest")
	}
	if s == nil {
		return refused("no policy set")
	}
	return s.authorize(req.req, true)
}
