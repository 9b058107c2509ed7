package policy

import (
	"fmt"
	"slices"

	cedar "github.com/cedar-policy/cedar-go"
)

// Decision is the outcome of one authorization. The zero Decision denies;
// Invoke and Approve always fill Policies.
type Decision struct {
	// Allow is true only when some permit policy is satisfied, no forbid
	// policy is, and no policy failed to evaluate.
	Allow bool
	// ApprovalRequired is true when Allow is and a determining permit policy
	// carries @approval("required"). Approve never sets it. The caller ORs in
	// the tool manifest's own requires_approval.
	ApprovalRequired bool
	// Approvers is how many distinct approvers must approve when a
	// determining permit carries @approvals("N"): the largest N; 0 when one
	// approval is enough.
	Approvers int
	// Policies are the ids of the determining policies, sorted, never nil: the
	// satisfied permits when allowed; the satisfied forbids when a forbid
	// denied; the policies that failed to evaluate when an error denied; empty
	// when nothing was satisfied (default deny) or the request was not built.
	Policies []string
	// Errors say why a request was denied by an error, one line each, sorted;
	// nil when there were none.
	Errors []string
}

// authorize runs Cedar and applies Writ's rules on top of its answer:
// an evaluation error anywhere denies (Cedar itself would skip the failing
// policy, which for a forbid means allowing what it meant to refuse), and a
// satisfied permit carrying @approval("required") requires approval.
func (s *Set) authorize(req request, approvable bool) Decision {
	allow, diag := cedar.Authorize(s.policies, req.entities, req.cedar)
	if len(diag.Errors) > 0 {
		d := Decision{Policies: make([]string, 0, len(diag.Errors))}
		for _, e := range diag.Errors {
			d.Policies = append(d.Policies, string(e.PolicyID))
			d.Errors = append(d.Errors, fmt.Sprintf("policy %q at line %d, column %d: %s",
				e.PolicyID, e.Position.Line, e.Position.Column, e.Message))
		}
		slices.Sort(d.Policies)
		slices.Sort(d.Errors)
		return d
	}
	d := Decision{Allow: bool(allow), Policies: make([]string, 0, len(diag.Reasons))}
	for _, r := range diag.Reasons {
		d.Policies = append(d.Policies, string(r.PolicyID))
		if n := s.approval[r.PolicyID]; d.Allow && approvable && n > 0 {
			d.ApprovalRequired = true
			if n > 1 {
				d.Approvers = max(d.Approvers, n)
			}
		}
	}
	slices.Sort(d.Policies)
	return d
}

// refused is the decision on a request that cannot be decided at all.
func refused(why string) Decision {
	return Decision{Policies: []string{}, Errors: []string{why}}
}
