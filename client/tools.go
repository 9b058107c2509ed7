package client

import (
	"context"
	"net/http"

	"github.com/writhq/writ/protocol"
)

// Tools returns the registered tools (GET /v1/tools), in the server's order.
func (c *Client) Tools(ctx context.Context) ([]protocol.ToolView, error) {
	var r protocol.ToolList
	if err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &r); err != nil {
		return nil, err
	}
	return r.Tools, nil
}
