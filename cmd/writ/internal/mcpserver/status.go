package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/writhq/writ/protocol"
)

// statusArgs are writ_intent_status's arguments.
type statusArgs struct {
	IntentID string `json:"intent_id" jsonschema:"the intent id a tool call returned"`
}

// addStatusTool registers writ_intent_status: the state of an intent of
// this tenant, answered as a tool call would be once it is final (the
// output, or isError with Writ's code), or its current state.
func (s *Server) addStatusTool() {
	schema := json.RawMessage(`{"type":"object","properties":{"intent_id":{"type":"string","description":"the intent id a tool call returned"}},"required":["intent_id"],"additionalProperties":false}`)
	s.mcp.AddTool(&mcp.Tool{
		Name:        statusTool,
		Description: "The state of a Writ intent that a tool call returned (for one that was still awaiting approval): its output once completed, Writ's error once it failed or was denied, otherwise its current state.",
		InputSchema: schema,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args statusArgs
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.IntentID == "" {
			return toolError("", protocol.CodeMalformed, "give intent_id, the id of an intent"), nil
		}
		r, err := s.c.Intent(ctx, args.IntentID, 0)
		if err != nil {
			return (&waiter{s: s, req: req}).failed(ctx, args.IntentID, err), nil
		}
		if final(r.State) {
			return s.answer(ctx, r), nil
		}
		text := "intent " + r.IntentID + " is " + r.State
		if r.State == "pending_approval" {
			text += ": it awaits approval"
		}
		return &mcp.CallToolResult{
			Meta:    mcp.Meta{metaIntentID: r.IntentID, metaState: r.State},
			Content: []mcp.Content{&mcp.TextContent{Text: text}},
		}, nil
	})
}
