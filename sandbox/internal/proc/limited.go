package proc

import (
	"context"
	"errors"
	"fmt"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/cgroup"
)

// errCloneIntoCgroup means the process did not start because the kernel
// does not know CLONE_INTO_CGROUP; RunLimited starts it again without.
var errCloneIntoCgroup = errors.New("proc: clone into cgroup unsupported")

// RunLimited runs spec in a cgroup of its own from cg (when the host has
// cgroups: cg may be nil) with the manifest's pids limit, and its memory
// limit where the host has a memory controller (RLIMIT_AS bounds memory
// elsewhere), and removes the group afterwards. A group that cannot be made
// refuses the run.
func RunLimited(ctx context.Context, spec Spec, cg *cgroup.Manager) (sandbox.Outcome, error) {
	if cg != nil {
		l := cgroup.Limits{Pids: spec.Limits.Pids}
		if cg.Memory() {
			l.MemoryBytes = spec.Limits.MemoryBytes
		}
		g, err := cg.Take(l)
		if err != nil {
			return sandbox.Refuse(spec.Tier, err)
		}
		defer g.Close()
		spec.Cgroup = g
	}
	out, err := Run(ctx, spec)
	if errors.Is(err, errCloneIntoCgroup) {
		// A kernel without CLONE_INTO_CGROUP (before 5.7): the process
		// never started; start it again, to be moved in at its exec stop.
		out, err = Run(ctx, spec)
	}
	if err != nil {
		return out, fmt.Errorf("%s: %w", spec.Tier, err)
	}
	return out, nil
}
