package policy

import (
	"errors"
	"fmt"
)

// Errors returned by Parse and by the request constructors. Parse errors that
// concern one policy come wrapped in a *PolicyError, which says where it is;
// match them with errors.Is.
var (
	// ErrSyntax wraps the Cedar parser's own message, which carries a position.
	ErrSyntax = errors.New("policy: syntax error")
	// ErrTextTooLarge: the policy text is longer than MaxTextBytes.
	ErrTextTooLarge = errors.New("policy: policy text too large")
	// ErrTooNested: brackets, if-then-else or unary operators nested past
	// MaxNesting; refused before parsing, with a position.
	ErrTooNested = errors.New("policy: policy text nested too deeply")
	// ErrMissingID: a policy has no @id annotation, so no decision could name it.
	ErrMissingID = errors.New(`policy: policy has no @id("...") annotation`)
	// ErrBadID: an @id is not 1-128 characters of [A-Za-z0-9._:-].
	ErrBadID = errors.New("policy: @id must be 1-128 characters of [A-Za-z0-9._:-]")
	// ErrDuplicateID: two policies carry the same @id.
	ErrDuplicateID = errors.New("policy: duplicate @id")
	// ErrBadApproval: an @approval annotation is not exactly @approval("required")
	// on a permit policy. A misspelt value is refused rather than ignored,
	// because ignoring it would silently drop an approval requirement.
	ErrBadApproval = errors.New(`policy: @approval must be @approval("required") on a permit policy`)
	// ErrBadApprovals: an @approvals annotation is not @approvals("N") with
	// N from 2 to MaxApprovals, on a permit policy.
	ErrBadApprovals = errors.New(`policy: @approvals must be @approvals("N"), N from 2 to 10, on a permit policy`)
	// ErrUnknownAttribute: a policy reads an attribute or context member the
	// entity model does not have (a typo such as context.parms).
	ErrUnknownAttribute = errors.New("policy: no such attribute in the Writ entity model")

	// ErrInput is the parent of every error about a request's JSON input.
	ErrInput = errors.New("policy: input not mappable to Cedar")
	// ErrNotObject: params or an intent context is not a JSON object.
	ErrNotObject = fmt.Errorf("%w: not a JSON object", ErrInput)
	// ErrTooDeep: JSON nested deeper than MaxDepth.
	ErrTooDeep = fmt.Errorf("%w: nested too deeply", ErrInput)
	// ErrTooManyValues: more than MaxValues JSON values in one request.
	ErrTooManyValues = fmt.Errorf("%w: too many values", ErrInput)
	// ErrNumber: a JSON number outside the range of an IEEE 754 double.
	ErrNumber = fmt.Errorf("%w: number out of range", ErrInput)
	// ErrJSON: the input is not one valid JSON value (syntax, duplicate member
	// names, invalid UTF-8, trailing data).
	ErrJSON = fmt.Errorf("%w: invalid JSON", ErrInput)

	// ErrMismatch: the tool or approval handed to a request constructor does
	// not belong to the intent, or a required argument is missing.
	ErrMismatch = errors.New("policy: request parts do not belong together")
)

// PolicyError is a Parse error about one policy: its @id when it has one, and
// where it starts in the text.
type PolicyError struct {
	ID     string // "" when the policy has no usable @id
	Line   int    // 1-based
	Column int    // 1-based
	Err    error  // wraps one of the Err… values above
}

func (e *PolicyError) Error() string {
	if e.ID != "" {
		return fmt.Sprintf("policy %q at line %d, column %d: %v", e.ID, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("policy at line %d, column %d: %v", e.Line, e.Column, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }
