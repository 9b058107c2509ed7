package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// LockSpec is what a lock matches: the members that are set must all equal
// the intent's (Node: the node it would run on). At least one is set.
type LockSpec struct {
	Tenant    string `json:"tenant,omitempty"`
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Node      string `json:"node,omitempty"`
	// TTL, when set, ends the lock by itself (whole seconds, at most a year).
	TTL    time.Duration `json:"-"`
	Reason string        `json:"reason"`
}

// Lock is a lock in force.
type Lock struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant,omitempty"`
	Principal string `json:"principal,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Node      string `json:"node,omitempty"`
	Reason    string `json:"reason"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

// CreateLock makes a lock (admin): from its commit on, nothing it matches is
// admitted (locked) or dispatched, and what it matches that waits or runs is
// stopped.
func (c *Client) CreateLock(ctx context.Context, s LockSpec) (*Lock, error) {
	body, err := json.Marshal(struct {
		LockSpec
		TTLSeconds int64 `json:"ttl_seconds,omitempty"`
	}{s, int64(s.TTL / time.Second)})
	if err != nil {
		return nil, err
	}
	var out struct {
		Lock Lock `json:"lock"`
	}
	if err := c.AdminJSON(ctx, "POST", "locks", body, &out); err != nil {
		return nil, err
	}
	return &out.Lock, nil
}

// Locks lists the locks in force (admin).
func (c *Client) Locks(ctx context.Context) ([]Lock, error) {
	var out struct {
		Locks []Lock `json:"locks"`
	}
	return out.Locks, c.AdminJSON(ctx, "GET", "locks", nil, &out)
}

// DeleteLock removes a lock (admin); not_found when none has the id.
func (c *Client) DeleteLock(ctx context.Context, id string) error {
	return c.Admin(ctx, "DELETE", "locks/"+url.PathEscape(id), nil)
}
