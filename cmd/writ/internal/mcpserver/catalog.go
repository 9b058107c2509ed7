package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// statusTool is the built-in tool that reports an intent's state; a
// registered tool of the same name is not offered.
const statusTool = "writ_intent_status"

// Sync reads the catalog (GET /v1/tools) and makes the offered tools match
// it: new and changed tools are added, removed ones dropped. The SDK tells
// connected clients (notifications/tools/list_changed) when anything changed.
//
// Every registered tool is offered: the catalog does not say which tools
// policy lets this principal invoke (that depends on each call's params and
// context), so a forbidden call is answered isError with policy's denial.
func (s *Server) Sync(ctx context.Context) error {
	tools, err := s.c.Tools(ctx)
	if err != nil {
		return fmt.Errorf("reading the tool catalog: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range tools {
		if t.Name == statusTool {
			continue
		}
		tool, err := mcpTool(t)
		if err != nil {
			s.cfg.Logger.Warn("tool not offered", "tool", t.Name, "error", err)
			continue
		}
		seen[t.Name] = true
		h := toolHash(t)
		if s.tools[t.Name] == h {
			continue
		}
		s.tools[t.Name] = h
		s.mcp.AddTool(tool, s.callHandler(t))
	}
	var gone []string
	for name := range s.tools {
		if !seen[name] {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	return nil
}

// Watch calls Sync every PollInterval until ctx ends; a failed read keeps
// the tools as they were.
func (s *Server) Watch(ctx context.Context) {
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("tool catalog", "error", err)
			}
		}
	}
}

// mcpTool is a catalog entry as an MCP tool. A schema without a type is
// given type "object" (params are always an object); a schema of another
// type cannot describe params and the tool is not offered.
func mcpTool(t protocol.ToolView) (*mcp.Tool, error) {
	schema := map[string]any{}
	if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
		if err := jsonx.UnmarshalLenient(t.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("input schema is not a JSON object: %v", err)
		}
	}
	switch typ := schema["type"]; typ {
	case nil:
		schema["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("input schema has type %v, not object", typ)
	}
	desc := t.Description
	if desc == "" {
		desc = "Writ tool " + t.Name
	}
	if t.RequiresApproval {
		desc += " (each call waits for a human approval)"
	}
	return &mcp.Tool{
		Name:        t.Name,
		Description: desc,
		InputSchema: schema,
		Meta: mcp.Meta{
			"writ/sandbox":           t.Sandbox,
			"writ/requires_approval": t.RequiresApproval,
			"writ/manifest_hash":     t.ManifestHash,
		},
	}, nil
}

// toolHash identifies what the catalog said about a tool.
func toolHash(t protocol.ToolView) string {
	b, _ := jsonx.Marshal(t)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
