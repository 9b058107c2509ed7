package policy

import (
	"strconv"

	cedar "github.com/cedar-policy/cedar-go"
)

// The annotations Writ gives meaning to.
const (
	annotationID       = "id"
	annotationApproval = "approval"
	// annotationApprovals asks for several distinct approvers.
	annotationApprovals = "approvals"
	approvalRequired    = "required"
	maxIDLen            = 128
)

// MaxApprovals bounds the approvers @approvals may ask for.
const MaxApprovals = 10

// checkAnnotations returns the policy's @id and how many distinct approvers
// it requires when it permits: 0 for none, 1 for @approval("required"), N for
// @approvals("N") (2 to MaxApprovals; the larger when both are given). The
// Cedar parser already refuses a repeated annotation key.
func checkAnnotations(p *cedar.Policy) (cedar.PolicyID, int, error) {
	ann := p.Annotations()
	id, ok := ann[annotationID]
	if !ok {
		return "", 0, policyError(p, "", ErrMissingID)
	}
	if !validID(string(id)) {
		return "", 0, policyError(p, "", ErrBadID)
	}
	approvers := 0
	if v, ok := ann[annotationApproval]; ok {
		if v != approvalRequired || p.Effect() != cedar.Permit {
			return "", 0, policyError(p, string(id), ErrBadApproval)
		}
		approvers = 1
	}
	if v, ok := ann[annotationApprovals]; ok {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 2 || n > MaxApprovals || strconv.Itoa(n) != string(v) || p.Effect() != cedar.Permit {
			return "", 0, policyError(p, string(id), ErrBadApprovals)
		}
		approvers = n
	}
	return cedar.PolicyID(id), approvers, nil
}
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func policyError(p *cedar.Policy, id string, err error) *PolicyError {
	pos := p.Position()
	return &PolicyError{ID: id, Line: pos.Line, Column: pos.Column, Err: err}
}
