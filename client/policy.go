package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/writhq/writ/protocol"
)

// Policy returns the installed policy set (admin).
func (c *Client) Policy(ctx context.Context) (*protocol.PolicyView, error) {
	var out protocol.PolicyView
	if err := c.AdminJSON(ctx, "GET", "policy", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PolicyVersions lists the kept policy versions, newest first (admin).
func (c *Client) PolicyVersions(ctx context.Context) ([]protocol.PolicyVersionSummary, error) {
	var out protocol.PolicyVersions
	return out.Versions, c.AdminJSON(ctx, "GET", "policy/versions", nil, &out)
}

// PolicyRollback reinstalls a kept version's text as a new version (admin).
func (c *Client) PolicyRollback(ctx context.Context, version uint64) error {
	b, _ := json.Marshal(protocol.PolicyRollback{Version: version})
	return c.Admin(ctx, "POST", "policy/rollback", b)
}

// PolicyDryRun replays the authorization of the intents admitted since since
// against a candidate policy text (admin).
func (c *Client) PolicyDryRun(ctx context.Context, text string, since time.Time) (*protocol.PolicyDryRunResult, error) {
	b, err := json.Marshal(protocol.PolicyDryRun{Text: text, Since: since})
	if err != nil {
		return nil, err
	}
	var out protocol.PolicyDryRunResult
	if err := c.AdminJSON(ctx, "POST", "policy/dry-run", b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
