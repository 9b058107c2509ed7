package sandbox

import (
	"errors"
	"fmt"
)

// Errors returned by this package and its tiers. Callers test them with
// errors.Is; the messages are safe to show to an operator.
var (
	// ErrInvalidManifest is the parent of every manifest parsing or
	// validation failure.
	ErrInvalidManifest = errors.New("sandbox: invalid manifest")

	// ErrRefused is the parent of every refusal: the tool was not started.
	// Run returns it together with an Outcome whose Status is StatusRefused.
	ErrRefused = errors.New("sandbox: refused")

	// ErrUnavailable means the tier cannot run anything on this host. It is
	// returned by Available and wrapped by the refusal Run returns.
	ErrUnavailable = errors.New("sandbox: tier unavailable")

	// ErrInterpreter means the executable that would really run is a shell,
	// an interpreter or a launcher, and the manifest does not allow one.
	ErrInterpreter = errors.New("sandbox: interpreter denied")

	// ErrDashArg means a templated parameter value starts with '-' and the
	// manifest does not allow that.
	ErrDashArg = errors.New("sandbox: option-like parameter refused")

	// ErrParams means the parameters are not a JSON object or do not fill
	// the argv template.
	ErrParams = errors.New("sandbox: invalid parameters")
)

// RefusedError is the error Run returns when it did not start the tool.
type RefusedError struct {
	Tier   string // the tier that refused
	Reason string // why, for the operator
	Err    error  // the more specific cause, if any (ErrUnavailable, ErrInterpreter...)
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("sandbox: %s tier refused: %s", e.Tier, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) hold for every RefusedError.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Unwrap returns the specific cause.
func (e *RefusedError) Unwrap() error { return e.Err }

// Refuse builds the Outcome and error of a refusal. Tiers use it so that every
// refusal looks the same to callers.
func Refuse(tier string, cause error) (Outcome, error) {
	reason := "refused"
	if cause != nil {
		reason = cause.Error()
	}
	return Outcome{Status: StatusRefused, Tier: tier, ExitCode: -1, Reason: reason},
		&RefusedError{Tier: tier, Reason: reason, Err: cause}
}
