package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox"
)

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte(`{"name":"echo","tier":"wasm","module":"/m.wasm","limits":{}}`))
	f.Add([]byte(`{"name":"x","tier":"process","command":{"path":"/bin/true","args":["{{a}}"]}}`))
	f.Add([]byte(mcpStdioManifest))
	f.Add([]byte(mcpHTTPManifest))
	f.Add([]byte(`{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"http://[::1]:8080/mcp"},"network":[{"host":"::1","port":8080}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := sandbox.ParseManifest(data)
		if err != nil {
			if !errors.Is(err, sandbox.ErrInvalidManifest) {
				t.Fatalf("error %v does not wrap ErrInvalidManifest", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed manifest does not validate: %v", err)
		}
		if m.Tier == sandbox.TierMCP && m.MCP.InnerTier != "" {
			if err := m.Inner().Validate(); err != nil {
				t.Fatalf("the inner manifest of a valid mcp manifest does not validate: %v", err)
			}
		}
	})
}

func FuzzArgv(f *testing.F) {
	f.Add("{{a}}", "--x={{b}}", `{"a":"v","b":"w"}`, false)
	f.Add("lit", "{{a}}{{a}}", `{"a":-1}`, true)
	f.Add("{{", "}}", `{"a":"-"}`, false)
	f.Fuzz(func(t *testing.T, t1, t2, params string, allowDash bool) {
		m := sandbox.Manifest{Name: "f", Tier: sandbox.TierProcess, AllowDashArgs: allowDash,
			Command: &sandbox.Command{Path: "/bin/f", Args: []string{t1, t2}}}
		args, err := sandbox.Argv(m, []byte(params))
		if err != nil {
			if !errors.Is(err, sandbox.ErrParams) && !errors.Is(err, sandbox.ErrDashArg) &&
				!errors.Is(err, sandbox.ErrInvalidManifest) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		if len(args) != 3 {
			t.Fatalf("got %d argv elements from 2 templates: %q", len(args), args)
		}
		for _, a := range args[1:] {
			if strings.ContainsRune(a, 0) {
				t.Fatalf("NUL in argv element %q", a)
			}
		}
		// A template without placeholders comes out unchanged.
		if !strings.Contains(t1, "{{") && args[1] != t1 {
			t.Fatalf("literal %q became %q", t1, args[1])
		}
	})
}

// FuzzMCPEndpoint: an accepted MCP URL has a host the allowlist can name
// and a port in range; nothing panics.
func FuzzMCPEndpoint(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "http://127.0.0.1:8080/", "http://[::1]:80/x",
		"ftp://a/", "https://u:p@a/", "https://a/#f", "https://a:0/", "https://a:99999/", "//a/", "https:///x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		host, port, err := sandbox.MCPEndpoint(raw)
		if err != nil {
			return
		}
		if host == "" || port < 1 || port > 65535 {
			t.Fatalf("%q accepted as %q:%d", raw, host, port)
		}
		m := sandbox.Manifest{Name: "f", Tier: sandbox.TierMCP, MCP: &sandbox.MCP{Tool: "t", URL: raw},
			Network: []sandbox.Destination{{Host: host, Port: port}}}
		if err := m.Validate(); err != nil && len(host) <= 253 {
			t.Fatalf("%q: an endpoint with its own destination allowlisted does not validate: %v", raw, err)
		}
	})
}
