package proc

import (
	"context"
	"fmt"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/internal/cgroup"
)

// RunLimited runs spec in a cgroup of its own from cg (when the host has
// cgroups: cg may be nil) with the manifest's pids and memory limits, and
// removes the group afterwards. A group that cannot be made refuses the run.
func RunLimited(ctx context.Context, spec Spec, cg *cgroup.Manager) (sandbox.Outcome, error) {
	if cg != nil {
		g, err := cg.New(cgroup.Name(), cgroup.Limits{Pids: spec.Limits.Pids, MemoryBytes: spec.Limits.MemoryBytes})
		if err != nil {
			return sandbox.Refuse(spec.Tier, err)
		}
		defer g.Close()
		spec.Cgroup = g
	}
	out, err := Run(ctx, spec)
	if err != nil {
		return out, fmt.Errorf("%s: %w", spec.Tier, err)
	}
	return out, nil
}
