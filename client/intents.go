package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/writhq/writ/protocol"
)

// IntentFilter selects the intents Intents lists; zero values match every
// intent. Tenant narrows an admin's or an auditor-of-all's list to one
// tenant (a tenant's key and an auditor of one tenant see only theirs).
type IntentFilter struct {
	Tenant, Run, Principal, Tool, State string
	// Since keeps intents admitted at or after it.
	Since time.Time
	// Limit is the page's size (the server's default, 50, when 0; at most
	// 500).
	Limit int
	// Cursor is IntentPage.Next of the previous page.
	Cursor string
}

// IntentPage is one page of intent summaries, newest first.
type IntentPage = protocol.IntentPage

// Intents lists intent summaries (GET /v1/intents), newest first. The read
// is signed (SignReads) or carries the token (an auditor's or the admin's).
// Page on with f.Cursor = page.Next while Next is not empty.
func (c *Client) Intents(ctx context.Context, f IntentFilter) (*IntentPage, error) {
	q := url.Values{}
	for k, v := range map[string]string{"tenant": f.Tenant, "run": f.Run, "principal": f.Principal, "tool": f.Tool,
		"state": f.State, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	path := "/v1/intents"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p IntentPage
	if err := c.do(ctx, http.MethodGet, path, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
