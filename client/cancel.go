package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/writhq/writ/protocol"
)

// RunCancel is the answer of CancelRun: the run's intents and their states.
type RunCancel = protocol.RunCancelResponse

// CancelIntent cancels an intent (POST /v1/intents/{id}/cancel) and returns
// its state. One not yet dispatched ends "canceled" at once; a dispatched one
// stays "dispatched" until its node has stopped the tool and reported
// (CancelIntentWait waits for that). Cancelling an intent that has ended
// changes nothing and returns its state. The request is signed like a read
// (SignReads) or carries the admin token; an intent of another tenant is
// not_found.
func (c *Client) CancelIntent(ctx context.Context, id string) (*IntentResponse, error) {
	return c.CancelIntentWait(ctx, id, 0)
}

// CancelIntentWait is CancelIntent, waiting up to wait for the intent's final
// state.
func (c *Client) CancelIntentWait(ctx context.Context, id string, wait time.Duration) (*IntentResponse, error) {
	var r IntentResponse
	return &r, c.do(ctx, http.MethodPost, "/v1/intents/"+url.PathEscape(id)+"/cancel"+waitQuery(wait), nil, &r)
}

// CancelRun cancels every intent of a tenant's run that has not ended (POST
// /v1/tenants/{tenant}/runs/{run}/cancel), as CancelIntent does each, and
// returns the run's intents with their states.
func (c *Client) CancelRun(ctx context.Context, tenant, run string) (*RunCancel, error) {
	return c.CancelRunWait(ctx, tenant, run, 0)
}

// CancelRunWait is CancelRun, waiting up to wait for the run's intents to end.
func (c *Client) CancelRunWait(ctx context.Context, tenant, run string, wait time.Duration) (*RunCancel, error) {
	var r RunCancel
	path := "/v1/tenants/" + url.PathEscape(tenant) + "/runs/" + url.PathEscape(run) + "/cancel" + waitQuery(wait)
	return &r, c.do(ctx, http.MethodPost, path, nil, &r)
}
