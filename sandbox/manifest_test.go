package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/writhq/writ/sandbox"
)

const goodManifest = `{
  "name": "grep",
  "tier": "bwrap",
  "command": {"path": "/usr/bin/grep", "args": ["-F", "--", "{{pattern}}", "input.txt"]},
  "read_only": ["/usr/lib"],
  "env": ["LANG"],
  "limits": {"timeout_ms": 5000, "output_bytes": 1024},
  "network": [{"host": "api.example.com", "port": 443}]
}`

func TestParseManifestGood(t *testing.T) {
	m, err := sandbox.ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatalf("ParseManifest: %v", err)
	}
	if m.Name != "grep" || m.Tier != sandbox.TierBwrap || m.Command.Path != "/usr/bin/grep" {
		t.Fatalf("got %+v", m)
	}
	if got, want := m.Limits.OutputBytes, int64(1024); got != want {
		t.Errorf("output_bytes: got %d, want %d", got, want)
	}
	if got := m.WithDefaults().Limits.Pids; got != sandbox.DefaultLimits().Pids {
		t.Errorf("default pids: got %d", got)
	}
}

func TestParseManifestRejects(t *testing.T) {
	wasm := func(extra string) string {
		return `{"name":"echo","tier":"wasm","module":"/m.wasm"` + extra + `}`
	}
	cases := map[string]string{
		"unknown field":      wasm(`,"shell":true`),
		"duplicate key":      wasm(`,"name":"other"`),
		"case variant":       wasm(`,"Name":"x"`),
		"nested unknown":     wasm(`,"limits":{"timeout":1}`),
		"nested dup":         wasm(`,"limits":{"pids":1,"pids":2}`),
		"trailing":           wasm(``) + `{}`,
		"not object":         `[]`,
		"bad tier":           `{"name":"x","tier":"docker","module":"/m.wasm"}`,
		"wasm with command":  `{"name":"x","tier":"wasm","module":"/m.wasm","command":{"path":"/bin/true"}}`,
		"process no command": `{"name":"x","tier":"process","module":"/m.wasm"}`,
		"relative path":      `{"name":"x","tier":"process","command":{"path":"bin/true"}}`,
		"unclean path":       `{"name":"x","tier":"process","command":{"path":"/bin/../bin/true"}}`,
		"bad template":       `{"name":"x","tier":"process","command":{"path":"/bin/true","args":["{{a b}}"]}}`,
		"stray braces":       `{"name":"x","tier":"process","command":{"path":"/bin/true","args":["a}}"]}}`,
		"negative limit":     wasm(`,"limits":{"pids":-1}`),
		"huge output":        wasm(`,"limits":{"output_bytes":1000000000}`),
		"bad env":            wasm(`,"env":["A=B"]`),
		"repeated env":       wasm(`,"env":["A","A"]`),
		"bad port":           wasm(`,"network":[{"host":"a.example","port":0}]`),
		"bad name":           `{"name":"../x","tier":"wasm","module":"/m.wasm"}`,
		"relative read_only": wasm(`,"read_only":["usr"]`),
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

func TestArgv(t *testing.T) {
	m := sandbox.Manifest{Name: "t", Tier: sandbox.TierProcess,
		Command: &sandbox.Command{Path: "/bin/t", Args: []string{"--x={{x}}", "{{y}}", "lit", "{{n}}{{b}}"}}}
	got, err := sandbox.Argv(m, []byte(`{"x":"a b; rm -rf /","y":"$(id)","n":1.5e3,"b":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/t", "--x=a b; rm -rf /", "$(id)", "lit", "1.5e3true"}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("got %q, want %q", got, want)
	}
	refusals := map[string]struct {
		params string
		want   error
	}{
		"dash":       {`{"x":"a","y":"-rf","n":1,"b":true}`, sandbox.ErrDashArg},
		"neg number": {`{"x":"a","y":"b","n":-1,"b":true}`, sandbox.ErrDashArg},
		"missing":    {`{"x":"a","n":1,"b":true}`, sandbox.ErrParams},
		"object":     {`{"x":"a","y":{},"n":1,"b":true}`, sandbox.ErrParams},
		"null":       {`{"x":"a","y":null,"n":1,"b":true}`, sandbox.ErrParams},
		"dup key":    {`{"x":"a","y":"b","y":"c","n":1,"b":true}`, sandbox.ErrParams},
		"not object": {`["a"]`, sandbox.ErrParams},
		"nul":        {`{"x":"a","y":"b\u0000","n":1,"b":true}`, sandbox.ErrParams},
	}
	for name, c := range refusals {
		t.Run(name, func(t *testing.T) {
			if _, err := sandbox.Argv(m, []byte(c.params)); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	m.AllowDashArgs = true
	if _, err := sandbox.Argv(m, []byte(`{"x":"a","y":"-rf","n":1,"b":true}`)); err != nil {
		t.Errorf("allow_dash_args: %v", err)
	}
}
