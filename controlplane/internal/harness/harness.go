// Package harness is the one door through which an in-process cluster and
// its benchmarks (controlplane/localcluster) reach into a controlplane
// Server. The server lends each of its servers' internals here once, at
// package initialization (controlplane/harness.go); production code never
// asks for them, and Go's internal rule lets only packages under
// controlplane/ import this one.
package harness

import (
	"context"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
)

// Internals are what one server lends an in-process cluster: what a
// benchmark reads (its applied index, its group commit counts) and the
// Raft entries it proposes (a bench node, raw baselines). Every field is
// set.
type Internals struct {
	// ID is the server's id (Config.ID).
	ID string
	// IsLeader reports whether the server leads the cluster now.
	IsLeader func() bool
	// Now is the server's clock.
	Now func() time.Time
	// AppliedIndex is the index of the last entry the server's FSM has
	// applied (Raft's own entries never reach it).
	AppliedIndex func() uint64
	// GroupStats returns how many entries the server has proposed with
	// group commit, and how many commands they carried.
	GroupStats func() (entries, commands uint64)
	// Tools are the registered tools' manifest hashes, by name.
	Tools func() map[string]string
	// Apply puts one command through Raft on the server, which must lead,
	// and waits until it is applied there. grouped proposes it as
	// admissions are proposed, grouped with the commands proposed at the
	// same time into one entry; otherwise it is an entry of its own. An
	// error wrapping raftnode.ErrNotLeader means the server does not lead.
	Apply func(ctx context.Context, t fsm.MsgType, cmd any, grouped bool) (fsm.Result, error)
}

// open is set once, by controlplane's package initialization, to the
// function that opens a *controlplane.Server.
var open func(server any) *Internals

// Register sets the function that opens a server. controlplane calls it
// once, at initialization; a second call panics.
func Register(f func(server any) *Internals) {
	if open != nil {
		panic("harness: registered twice")
	}
	open = f
}

// Of returns the internals of server, a *controlplane.Server. It panics for
// anything else: the callers are in-process clusters, where that is a
// programming error.
func Of(server any) *Internals { return open(server) }
