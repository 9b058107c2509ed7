package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Tool is one registered tool as GET /v1/tools shows it: the catalog every
// caller may read, not a tenant's data.
type Tool struct {
	Name             string          `json:"name"`
	Description      string          `json:"description,omitempty"`
	InputSchema      json.RawMessage `json:"input_schema"`
	Sandbox          string          `json:"sandbox"`
	Capabilities     []string        `json:"capabilities"`
	RequiresApproval bool            `json:"requires_approval"`
	ManifestHash     string          `json:"manifest_hash"`
}

// Tools returns the registered tools (GET /v1/tools), in the server's order.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var r struct {
		Tools []Tool `json:"tools"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &r); err != nil {
		return nil, err
	}
	return r.Tools, nil
}
