package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/web"
)

// Every admin change is proposed as an fsm.MsgAdmin naming who made it: the
// FSM applies the change and appends its admin entry (protocol.AdminEntry)
// to the ledger in the same entry. The actor travels in the request's
// context, set by whatever authenticated it.

type actorKey struct{}

// The actors that are not a token or a user.
const (
	// ActorDev is what writ dev registers itself (its tenant, keys, tools
	// and policy).
	ActorDev = "dev"
	// ActorServer is a change made through this package's Go API by the
	// program that runs the server (writ bench, writ fleet), not through
	// an authenticated request.
	ActorServer = "server"
)

// WithActor returns ctx naming actor as who makes the admin changes made
// with it.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

func actorOf(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	if p, ok := web.PrincipalFrom(ctx); ok && p.User != "" {
		return userActor(p.User)
	}
	return ActorServer
}

// adminTokenActor names a configured admin token by the first 16 hex digits
// of its SHA-256: which token it was, and nothing that signs in.
func adminTokenActor(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "admin-token:" + hex.EncodeToString(sum[:8])
}

// userActor names a dashboard user (or, for a session opened with an admin
// token, "user:admin-token").
func userActor(user string) string { return "user:" + user }

// adminCommand wraps an admin change for the log.
func (s *Server) adminCommand(ctx context.Context, t fsm.MsgType, cmd any) (fsm.AdminCmd, error) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return fsm.AdminCmd{}, err
	}
	return fsm.AdminCmd{Actor: actorOf(ctx), At: s.now(), Type: t, Cmd: b, Authz: true}, nil
}

// applyAdminChange proposes an admin change on this server (the leader).
func (s *Server) applyAdminChange(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, error) {
	c, err := s.adminCommand(ctx, t, cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	return s.apply(ctx, fsm.MsgAdmin, c)
}

// applyAdminAnywhere proposes an admin change from any server (the
// dashboard's), relayed to the leader.
func (s *Server) applyAdminAnywhere(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, error) {
	c, err := s.adminCommand(ctx, t, cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	return s.applyAnywhere(ctx, fsm.MsgAdmin, c)
}

// relayedAdminChange decodes an admin change a follower's dashboard relayed:
// only the changes the dashboard makes, with the leader's clock in place of
// the follower's.
func relayedAdminChange(s *Server, raw []byte) (*fsm.AdminCmd, error) {
	c := &fsm.AdminCmd{}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, err
	}
	now := s.now()
	c.At, c.Authz = now, true
	var inner any
	switch c.Type {
	case fsm.MsgNodeStatus:
		inner = &fsm.NodeStatus{}
	case fsm.MsgPutLock:
		inner = &fsm.PutLock{}
	case fsm.MsgDeleteLock:
		inner = &fsm.DeleteLock{}
	default:
		return nil, fmt.Errorf("admin change %s is not relayed", c.Type)
	}
	if err := json.Unmarshal(c.Cmd, inner); err != nil {
		return nil, err
	}
	switch v := inner.(type) {
	case *fsm.NodeStatus:
		v.At = now
	case *fsm.PutLock:
		// The lock's expiry was made from the follower's clock: kept as a
		// duration from the leader's.
		if !v.Lock.ExpiresAt.IsZero() {
			v.Lock.ExpiresAt = now.Add(v.Lock.ExpiresAt.Sub(v.At))
		}
		v.At = now
	case *fsm.DeleteLock:
		v.At = now
	}
	b, err := json.Marshal(inner)
	c.Cmd = b
	return c, err
}
