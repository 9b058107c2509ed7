package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/writhq/writ/protocol"
)

// LockSpec is what a lock matches: the members that are set must all equal
// the intent's (Node: the node it would run on). At least one is set.
type LockSpec struct {
	Tenant, Principal, Tool, Node string
	// TTL, when set, ends the lock by itself (whole seconds, at most a year).
	TTL    time.Duration
	Reason string
}

// CreateLock makes a lock (admin): from its commit on, nothing it matches is
// admitted (locked) or dispatched, and what it matches that waits or runs is
// stopped.
func (c *Client) CreateLock(ctx context.Context, s LockSpec) (*protocol.LockView, error) {
	body, err := json.Marshal(protocol.LockRequest{Tenant: s.Tenant, Principal: s.Principal, Tool: s.Tool, Node: s.Node,
		TTLSeconds: int64(s.TTL / time.Second), Reason: s.Reason})
	if err != nil {
		return nil, err
	}
	var out protocol.LockResponse
	if err := c.AdminJSON(ctx, "POST", "locks", body, &out); err != nil {
		return nil, err
	}
	return &out.Lock, nil
}

// Locks lists the locks in force (admin).
func (c *Client) Locks(ctx context.Context) ([]protocol.LockView, error) {
	var out protocol.LockList
	return out.Locks, c.AdminJSON(ctx, "GET", "locks", nil, &out)
}

// DeleteLock removes a lock (admin); not_found when none has the id.
func (c *Client) DeleteLock(ctx context.Context, id string) error {
	return c.Admin(ctx, "DELETE", "locks/"+url.PathEscape(id), nil)
}
