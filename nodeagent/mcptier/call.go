package mcptier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/sandbox"
)

// call is how one tools/call went.
type call struct {
	result *sdk.CallToolResult // nil when the server gave no result
	err    error               // why not
}

// call connects over t (initialize), calls tool with args, and closes the
// session: one tools/call per run, nothing else asked of the server.
func (d *Driver) call(ctx context.Context, t sdk.Transport, tool string, args map[string]jsontext.Value) call {
	client := sdk.NewClient(&sdk.Implementation{Name: d.cfg.ClientName, Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return call{err: fmt.Errorf("initialize: %w", err)}
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return call{err: fmt.Errorf("tools/call %s: %w", tool, err)}
	}
	return call{result: res}
}

// list connects over t and reads every page of tools/list.
func (d *Driver) list(ctx context.Context, t sdk.Transport) ([]*sdk.Tool, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: d.cfg.ClientName, Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	defer cs.Close()
	var tools []*sdk.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if len(tools) == maxTools {
			return nil, fmt.Errorf("tools/list: more than %d tools", maxTools)
		}
		tools = append(tools, tool)
	}
	return tools, nil
}

// maxTools bounds what List reads from one server.
const maxTools = 1024

// maxReason bounds what of a server's error message reaches the result.
const maxReason = 256

// finish turns the outcome of the server's run and the call into the
// run's outcome. A run its limits stopped keeps that status (timeout,
// output_limit, disk_limit); otherwise a call the server answered is ok,
// or error with exit code 1 when the result says isError, and a call
// without an answer is an error saying why. The output is the result's
// content (contentText), within the output limit; stderr stays the
// server's.
func finish(out sandbox.Outcome, c call, m sandbox.Manifest, info *sandbox.MCPCall) sandbox.Outcome {
	out.Tier, out.MCP = sandbox.TierMCP, info
	var content []byte
	switch {
	case out.Status == sandbox.StatusTimeout || out.Status == sandbox.StatusOutputLimit || out.Status == sandbox.StatusDiskLimit:
	case c.result == nil:
		why := "the server ended without answering"
		if c.err != nil {
			why = c.err.Error()
		}
		if out.Reason != "" {
			why += " (" + out.Reason + ")"
		}
		out.Status, out.ExitCode, out.Reason = sandbox.StatusError, -1, "mcp: "+clip(why)
	case c.result.IsError:
		content = contentText(c.result)
		out.Status, out.ExitCode, out.Reason = sandbox.StatusError, 1, "mcp: the tool reported an error"
	default:
		content = contentText(c.result)
		out.Status, out.ExitCode, out.Reason = sandbox.StatusOK, 0, ""
	}
	sum := sha256.Sum256(content)
	out.OutputHash, out.OutputBytes = "sha256:"+hex.EncodeToString(sum[:]), int64(len(content))
	out.Output, out.Truncated = content, false
	if limit := m.Limits.OutputBytes; int64(len(content)) > limit {
		out.Output, out.Truncated = content[:limit], true
	}
	return out
}

// contentText is a result as a tool's output: the text of its content
// items, one after the other, separated by newlines; an item that is not
// text (image, audio, resource) as its JSON. A result with no content but
// structuredContent is that value's JSON.
func contentText(r *sdk.CallToolResult) []byte {
	if len(r.Content) == 0 && r.StructuredContent != nil {
		b, err := jsonx.Marshal(r.StructuredContent)
		if err != nil {
			return nil
		}
		return b
	}
	parts := make([]string, 0, len(r.Content))
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		b, err := jsonx.Marshal(c)
		if err != nil {
			continue
		}
		parts = append(parts, string(b))
	}
	return []byte(strings.Join(parts, "\n"))
}

// clip keeps a message printable and short: it comes from the server.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxReason {
		s = s[:maxReason]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}
