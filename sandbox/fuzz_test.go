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
		h1, err := m.Hash()
		if err != nil {
			t.Fatalf("hash: %v", err)
		}
		if h2, _ := m.WithDefaults().Hash(); h1 != h2 {
			t.Fatalf("hash not stable under WithDefaults: %s %s", h1, h2)
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
