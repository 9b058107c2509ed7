package policy

import (
	cedar "github.com/cedar-policy/cedar-go"
)

// The annotations Writ gives meaning to.
const (
	annotationID       = "id"
	annotationApproval = "approval"
	approvalRequired   = "required"
	maxIDLen           = 128
)

// checkAnnotations returns the policy's @id and whether it requires approval.
// The Cedar parser already refuses a repeated annotation key.
func checkAnnotations(p *cedar.Policy) (cedar.PolicyID, bool, error) {
	ann := p.Annotations()
	id, ok := ann[annotationID]
	if !ok {
		return "", false, policyError(p, "", ErrMissingID)
	}
	if !validID(string(id)) {
		return "", false, policyError(p, "", ErrBadID)
	}
	v, ok := ann[annotationApproval]
	if !ok {
		return cedar.PolicyID(id), false, nil
	}
	if v != approvalRequired || p.Effect() != cedar.Permit {
		return "", false, policyError(p, string(id), ErrBadApproval)
	}
	return cedar.PolicyID(id), true, nil
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
