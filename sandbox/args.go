package sandbox

import (
	"errors"
	"fmt"

	"github.com/writhq/writ/sandbox/internal/argv"
)

// Argv returns the argv a command-based tool runs with: the command path,
// then each template element of the manifest filled from params. Params that
// are not one JSON object, a missing or non-scalar parameter, and (unless the
// manifest allows it) a value starting with '-' are errors wrapping ErrParams
// or ErrDashArg. Tiers refuse the invocation on any of them.
func Argv(m Manifest, params []byte) ([]string, error) {
	if m.Command == nil {
		return nil, fmt.Errorf("%w: manifest has no command", ErrInvalidManifest)
	}
	obj, err := ParseParams(params)
	if err != nil {
		return nil, err
	}
	args, err := argv.Expand(m.Command.Args, obj, m.AllowDashArgs)
	switch {
	case errors.Is(err, argv.ErrDash):
		return nil, fmt.Errorf("%w: %v", ErrDashArg, err)
	case errors.Is(err, argv.ErrSyntax):
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	return append([]string{m.Command.Path}, args...), nil
}
