//go:build !linux && !darwin

package proc

import (
	"context"
	"errors"
	"runtime"

	"github.com/writhq/writ/sandbox"
)

// Run is not implemented on this system: contained processes need Linux
// (the macOS sandbox-exec profile of the process tier is yet to come), so
// the tiers built on it report themselves unavailable.
func Run(ctx context.Context, spec Spec) (sandbox.Outcome, error) {
	return sandbox.Outcome{Tier: spec.Tier, ExitCode: -1}, errors.New("proc: contained processes are not supported on " + runtime.GOOS)
}
