package controlplane

import (
	"context"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/harness"
)

// The server lends its internals to in-process clusters and benchmarks
// (controlplane/localcluster) through controlplane/internal/harness, the
// only door: nothing of theirs is part of Server's exported API.
func init() {
	harness.Register(func(v any) *harness.Internals {
		s := v.(*Server)
		return &harness.Internals{
			ID:           s.cfg.ID,
			IsLeader:     s.isLeader,
			Now:          s.now,
			AppliedIndex: s.reads.Index,
			GroupStats:   s.node.GroupStats,
			Tools: func() map[string]string {
				tools := map[string]string{}
				for _, t := range s.reads.Tools() {
					tools[t.Name] = t.Hash
				}
				return tools
			},
			Apply: func(ctx context.Context, t fsm.MsgType, cmd any, grouped bool) (fsm.Result, error) {
				apply := s.node.Apply
				if grouped {
					apply = s.node.Propose
				}
				res, _, err := apply(ctx, t, cmd)
				return res, err
			},
		}
	})
}
