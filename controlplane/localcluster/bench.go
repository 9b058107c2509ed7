package localcluster

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/harness"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/protocol"
)

// ErrNotLeader is ApplyNoop's error on a server that does not lead.
var ErrNotLeader = errors.New("localcluster: not the leader")

// ApplyNoop puts one entry that changes nothing, of size bytes, through
// Raft on s and waits until it is applied there: the raw Raft baseline of
// benchmarks. grouped proposes it as admissions are proposed, grouped with
// the no-ops proposed at the same time into one entry; otherwise it is an
// entry of its own.
func ApplyNoop(ctx context.Context, s *controlplane.Server, size int, grouped bool) error {
	_, err := harness.Of(s).Apply(ctx, fsm.MsgNoop, strings.Repeat("x", max(size-3, 0)), grouped)
	if errors.Is(err, raftnode.ErrNotLeader) {
		return ErrNotLeader
	}
	return err
}

// AddBenchNode records, through Raft on s (the leader), a ready node that
// may run every registered tool with room for every dispatch, so that
// benchmarked intents are admitted and dispatched as in production rather
// than rejected for want of a node. The node never connects: this measures
// admission, not execution.
func AddBenchNode(ctx context.Context, s *controlplane.Server) error {
	in := harness.Of(s)
	for _, step := range benchNodeSteps(in.Now(), in.Tools()) {
		res, err := in.Apply(ctx, step.t, step.cmd, false)
		if err != nil {
			return err
		}
		if res.Err != nil {
			return fmt.Errorf("localcluster: bench node: %s", res.Err.Message)
		}
	}
	return nil
}

// AdmitEntrySize is the size of the Raft entry that admitting the signed
// intent raw proposes, for a baseline of entries of the same size.
func AdmitEntrySize(raw []byte) (int, error) {
	in, err := protocol.DecodeIntent(raw, 1<<20)
	if err != nil {
		return 0, err
	}
	canon, err := protocol.Canonicalize(raw)
	if err != nil {
		return 0, err
	}
	expires, _ := protocol.ParseTime(in.ExpiresAt)
	b, err := fsm.Encode(fsm.MsgAdmitBinary, &fsm.Admit{
		At: time.Now().UTC(), Intent: canon, ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID,
		Tool: in.Tool, PayloadHash: in.PayloadHash, IdempotencyKey: in.IdempotencyKey, ExpiresAt: expires, Target: in.Target,
		Decision: fsm.Decision{Allow: true, PolicyHash: protocol.HashBytes(nil), Policies: []string{"dev.invoke"}},
	})
	return len(b), err
}

type step struct {
	t   fsm.MsgType
	cmd any
}

// benchNodeSteps are the commands that record the bench node at at, with
// tools (name to manifest hash): a join token, its enrollment, a session.
func benchNodeSteps(at time.Time, tools map[string]string) []step {
	// A key no one holds the private half of: no result is ever accepted
	// for the bench node (an all-zero key is a small-order point, for
	// which signatures could be forged).
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic("localcluster: no randomness: " + err.Error())
	}
	return []step{
		{fsm.MsgPutJoinToken, fsm.PutJoinToken{ID: "bench", Hash: "sha256:bench", ExpiresAt: at.Add(time.Hour)}},
		{fsm.MsgEnroll, fsm.Enroll{At: at, TokenID: "bench", TokenHash: "sha256:bench", Node: "bench-node", Name: "bench", Public: pub}},
		{fsm.MsgNodeSession, fsm.NodeSession{At: at, Node: "bench-node", Server: "no-server", Connected: true,
			Tiers: []string{"wasm"}, Tools: tools, Concurrency: 1 << 30}},
	}
}
