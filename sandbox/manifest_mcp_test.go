package sandbox_test

import (
	"errors"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

const (
	mcpStdioManifest = `{"name":"files.read","tier":"mcp","command":{"path":"/usr/local/bin/files-mcp","args":["--root","/srv"]},
"mcp":{"tool":"read_file","inner_tier":"bwrap"},"read_only":["/srv"],"network":[{"host":"api.example.com","port":443}]}`
	mcpHTTPManifest = `{"name":"remote.search","tier":"mcp","mcp":{"tool":"search","url":"https://mcp.example.com/mcp"},
"network":[{"host":"mcp.example.com","port":443}]}`
)

func TestParseManifestMCP(t *testing.T) {
	m, err := sandbox.ParseManifest([]byte(mcpStdioManifest))
	if err != nil {
		t.Fatalf("stdio: %v", err)
	}
	in := m.Inner()
	if in.Tier != sandbox.TierBwrap || in.MCP != nil || in.Command.Path != "/usr/local/bin/files-mcp" || len(in.ReadOnly) != 1 || len(in.Network) != 1 {
		t.Errorf("got inner manifest %+v, want the same grants in the bwrap tier", in)
	}
	if _, err := sandbox.ParseManifest([]byte(mcpHTTPManifest)); err != nil {
		t.Fatalf("http: %v", err)
	}
	// The hash covers the mcp member: another tool or inner tier is
	// another manifest.
	hash := func() string {
		raw, err := jsonx.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		h, err := protocol.ManifestHash(raw)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h1 := hash()
	m.MCP.Tool = "write_file"
	h2 := hash()
	m.MCP.Tool, m.MCP.InnerTier = "read_file", sandbox.TierProcess
	h3 := hash()
	if h1 == h2 || h1 == h3 || h2 == h3 {
		t.Errorf("hashes %s %s %s: the mcp member must change the hash", h1, h2, h3)
	}
}

func TestParseManifestMCPRejects(t *testing.T) {
	stdio := func(mcp, extra string) string {
		return `{"name":"s","tier":"mcp","command":{"path":"/bin/s"},"mcp":` + mcp + extra + `}`
	}
	cases := map[string]string{
		"no mcp member":         `{"name":"s","tier":"mcp","command":{"path":"/bin/s"}}`,
		"mcp in another tier":   `{"name":"s","tier":"bwrap","command":{"path":"/bin/s"},"mcp":{"tool":"t","inner_tier":"bwrap"}}`,
		"no tool":               stdio(`{"inner_tier":"bwrap"}`, ``),
		"bad tool name":         stdio(`{"tool":"a b","inner_tier":"bwrap"}`, ``),
		"wasm inner tier":       stdio(`{"tool":"t","inner_tier":"wasm"}`, ``),
		"mcp inner tier":        stdio(`{"tool":"t","inner_tier":"mcp"}`, ``),
		"neither":               stdio(`{"tool":"t"}`, ``),
		"both":                  stdio(`{"tool":"t","inner_tier":"bwrap","url":"https://a.example/"}`, `,"network":[{"host":"a.example","port":443}]`),
		"placeholder in argv":   `{"name":"s","tier":"mcp","command":{"path":"/bin/s","args":["{{x}}"]},"mcp":{"tool":"t","inner_tier":"bwrap"}}`,
		"relative command":      `{"name":"s","tier":"mcp","command":{"path":"bin/s"},"mcp":{"tool":"t","inner_tier":"bwrap"}}`,
		"stdio without command": `{"name":"s","tier":"mcp","mcp":{"tool":"t","inner_tier":"bwrap"}}`,
		"module":                `{"name":"s","tier":"mcp","module":"/m.wasm","mcp":{"tool":"t","url":"https://a.example/"},"network":[{"host":"a.example","port":443}]}`,
		"url not allowlisted":   `{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"https://a.example/"},"network":[{"host":"a.example","port":8443}]}`,
		"url scheme":            `{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"ftp://a.example/"},"network":[{"host":"a.example","port":21}]}`,
		"url with user":         `{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"https://u:p@a.example/"},"network":[{"host":"a.example","port":443}]}`,
		"url wildcard host":     `{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"https://*.example.com/"},"network":[{"host":"*.example.com","port":443}]}`,
		"url relative":          `{"name":"s","tier":"mcp","mcp":{"tool":"t","url":"/mcp"},"network":[{"host":"a.example","port":443}]}`,
		"http with command":     `{"name":"s","tier":"mcp","command":{"path":"/bin/s"},"mcp":{"tool":"t","url":"https://a.example/"},"network":[{"host":"a.example","port":443}]}`,
		"unknown mcp field":     stdio(`{"tool":"t","inner_tier":"bwrap","shell":true}`, ``),
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := sandbox.ParseManifest([]byte(doc))
			if !errors.Is(err, sandbox.ErrInvalidManifest) {
				t.Fatalf("got %v, want ErrInvalidManifest", err)
			}
		})
	}
}
