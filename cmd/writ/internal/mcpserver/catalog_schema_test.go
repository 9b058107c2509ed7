package mcpserver

import (
	"testing"

	"github.com/writhq/writ/protocol"
)

// TestMCPToolSchema: a catalog entry's input schema becomes the MCP tool's,
// read as the control plane stored it: a schema with a repeated member name
// or invalid UTF-8 (which older registrations may hold) is still offered, the
// last of a repeated name winning; a schema of another type than object is
// not.
func TestMCPToolSchema(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		want         string // the tool's description in the schema, "" for none; "refused" when the tool is not offered
	}{
		{"none", ``, ""},
		{"null", `null`, ""},
		{"object", `{"type":"object","description":"d"}`, "d"},
		{"no type", `{"description":"d"}`, "d"},
		{"repeated name", `{"type":"object","description":"first","description":"last"}`, "last"},
		{"invalid UTF-8", "{\"type\":\"object\",\"description\":\"a\xffb\"}", "a\ufffdb"},
		{"array", `{"type":"array"}`, "refused"},
		{"not an object", `[1]`, "refused"},
		{"not JSON", `{"type":`, "refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool, err := mcpTool(protocol.ToolView{Name: "echo", InputSchema: []byte(c.schema)})
			if c.want == "refused" {
				if err == nil {
					t.Fatalf("offered with schema %v", tool.InputSchema)
				}
				return
			}
			if err != nil {
				t.Fatalf("not offered: %v", err)
			}
			s, ok := tool.InputSchema.(map[string]any)
			if !ok || s["type"] != "object" {
				t.Fatalf("schema %#v, want type object", tool.InputSchema)
			}
			if d, _ := s["description"].(string); d != c.want {
				t.Fatalf("description %q, want %q", d, c.want)
			}
		})
	}
}
