package protocol_test

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

// TestResultMCP: a result of the mcp tier names the server and tool, and
// survives signing and verifying; a malformed member is refused.
func TestResultMCP(t *testing.T) {
	t.Parallel()
	nodes := signerKeys{"node-1": nodePriv.Public().(ed25519.PublicKey)}
	v := verifierAt(t, t0)
	withMCP := func(r *protocol.Result) {
		r.MCP = &protocol.ResultMCP{Tool: "read_file", Server: protocol.HashBytes([]byte("server")), InnerTier: "bwrap"}
	}
	for _, c := range []struct {
		name string
		mod  func(*protocol.Result)
		want protocol.Code
	}{
		{"stdio", func(*protocol.Result) {}, ""},
		{"http", func(r *protocol.Result) { r.MCP.Server, r.MCP.InnerTier = "https://mcp.example/mcp", "" }, ""},
		{"no tool", func(r *protocol.Result) { r.MCP.Tool = "" }, protocol.CodeMalformed},
		{"tool with space", func(r *protocol.Result) { r.MCP.Tool = "a b" }, protocol.CodeMalformed},
		{"no server", func(r *protocol.Result) { r.MCP.Server = "" }, protocol.CodeMalformed},
		{"server too long", func(r *protocol.Result) { r.MCP.Server = strings.Repeat("a", protocol.MaxMCPServerLen+1) }, protocol.CodeMalformed},
		{"control character", func(r *protocol.Result) { r.MCP.Server = "https://a\nb" }, protocol.CodeMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newResult(withMCP, c.mod)
			input, err := protocol.SigningInput(protocol.KindResult, encode(t, r))
			if err != nil {
				t.Fatal(err)
			}
			r.Sig = protocol.Ed25519Sign(nodePriv, input)
			got, err := v.VerifyResult(encode(t, r), nodes)
			wantCode(t, err, c.want)
			if err == nil && !reflect.DeepEqual(got.MCP, r.MCP) {
				t.Errorf("decoded %+v, signed %+v", got.MCP, r.MCP)
			}
		})
	}
	if plain := string(encode(t, newResult())); strings.Contains(plain, `"mcp"`) {
		t.Errorf("a result without it encodes mcp: %s", plain)
	}
}
