package controlplane

import (
	"context"
	"time"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// The dashboard's audit page: the admin record and the locks. Changes are
// relayed to the leader from any server, and recorded with the session's
// user (web.WithPrincipal) as their actor.

var _ web.Admin = dashBackend{}

func (b dashBackend) AdminEntries(before uint64, limit int) []web.AdminEntry {
	var out []web.AdminEntry
	for _, i := range b.s.reads.AdminEntries(before, limit) {
		leaf, err := b.s.ledger.Leaf(int64(i))
		if err != nil {
			continue // applied, not yet written
		}
		e, err := protocol.DecodeAdminEntry(leaf, 0)
		if err != nil {
			b.s.log.Error("ledger: an admin entry does not decode", "index", i, "err", err)
			continue
		}
		at, _ := protocol.ParseTime(e.RecordedAt)
		out = append(out, web.AdminEntry{Index: e.Index, RecordedAt: at, Actor: e.Actor, Action: e.Action, Object: e.Object,
			Tenant: e.Tenant, Before: e.Before, After: e.After})
	}
	return out
}

func (b dashBackend) Locks() []web.Lock {
	var out []web.Lock
	for _, l := range b.s.reads.Locks() {
		out = append(out, web.Lock{ID: l.ID, Tenant: l.Tenant, Principal: l.Principal, Tool: l.Tool, Node: l.Node,
			Reason: l.Reason, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt})
	}
	return out
}

func (b dashBackend) CreateLock(ctx context.Context, req web.LockRequest) (web.Lock, error) {
	q := protocol.LockRequest{Tenant: req.Tenant, Principal: req.Principal, Tool: req.Tool, Node: req.Node,
		Reason: req.Reason, TTLSeconds: int64(req.TTL / time.Second)}
	if req.TTL > 0 && q.TTLSeconds == 0 {
		q.TTLSeconds = 1
	}
	l, aerr := adminAPI{b.s}.createLock(ctx, q, b.s.applyAdminAnywhere)
	if aerr != nil {
		return web.Lock{}, webError(aerr)
	}
	return web.Lock{ID: l.ID, Tenant: l.Tenant, Principal: l.Principal, Tool: l.Tool, Node: l.Node, Reason: l.Reason,
		CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt}, nil
}

func (b dashBackend) DeleteLock(ctx context.Context, id string) error {
	if aerr := (adminAPI{b.s}).deleteLock(ctx, id, b.s.applyAdminAnywhere); aerr != nil {
		return webError(aerr)
	}
	return nil
}
