package controlplane_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// TestToolFormats: GET /v1/tools?format=openai|anthropic gives every
// registered tool as that API's tool definition, with a function name the
// API accepts and the map back to the Writ name; any other query is
// malformed.
func TestToolFormats(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	long := "srv." + strings.Repeat("x", 58) // 62 characters, 64+ with "__"
	for _, name := range []string{"srv.read_file", "srv__read_file", long} {
		reg := fmt.Sprintf(`{"name":%q,"description":"reads","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"manifest":{"name":%q,"tier":"wasm","module":"/m.wasm"}}`, name, name)
		if err := d.admin.Admin(ctx, "PUT", "tools", []byte(reg)); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	base := "http://" + d.s.Addr().String() + "/v1/tools"
	get := func(query string) (int, []byte) {
		resp, err := http.Get(base + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var plain struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if status, b := get(""); status != 200 || jsonx.UnmarshalLenient(b, &plain) != nil {
		t.Fatalf("GET /v1/tools: %d %s", status, b)
	}
	type catalog struct {
		Format string            `json:"format"`
		Tools  []jsontext.Value  `json:"tools"`
		Names  map[string]string `json:"names"`
	}
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			status, b := get("?format=" + format)
			var c catalog
			if status != 200 || jsonx.UnmarshalLenient(b, &c) != nil {
				t.Fatalf("got %d %s", status, b)
			}
			if c.Format != format || len(c.Tools) != len(plain.Tools) || len(c.Names) != len(plain.Tools) {
				t.Fatalf("got %d tools and %d names in %q, want the %d registered", len(c.Tools), len(c.Names), c.Format, len(plain.Tools))
			}
			back := map[string]bool{}
			for _, raw := range c.Tools {
				var def struct {
					Type     string `json:"type"`
					Function *struct {
						Name        string         `json:"name"`
						Description string         `json:"description"`
						Parameters  jsontext.Value `json:"parameters"`
					} `json:"function"`
					Name        string         `json:"name"`
					Description string         `json:"description"`
					InputSchema jsontext.Value `json:"input_schema"`
				}
				if err := jsonx.UnmarshalLenient(raw, &def); err != nil {
					t.Fatal(err)
				}
				name, schema, desc := def.Name, def.InputSchema, def.Description
				if format == "openai" {
					if def.Type != "function" || def.Function == nil || def.Name != "" || def.InputSchema != nil {
						t.Fatalf("openai definition %s: want {type: function, function: {...}}", raw)
					}
					name, schema, desc = def.Function.Name, def.Function.Parameters, def.Function.Description
				} else if def.Type != "" || def.Function != nil {
					t.Fatalf("anthropic definition %s: want {name, description, input_schema}", raw)
				}
				if !validFunctionName(name) {
					t.Errorf("function name %q: want 1-64 of A-Z a-z 0-9 _ -", name)
				}
				writ, ok := c.Names[name]
				if !ok || back[writ] {
					t.Fatalf("function %q maps to %q (known %v, seen %v)", name, writ, ok, back[writ])
				}
				back[writ] = true
				if writ == "srv.read_file" && (desc != "reads" || !strings.Contains(string(schema), `"path"`)) {
					t.Errorf("srv.read_file as %s: want its description and schema", raw)
				}
			}
			for _, tl := range plain.Tools {
				if !back[tl.Name] {
					t.Errorf("tool %s has no definition", tl.Name)
				}
			}
		})
	}
	for _, q := range []string{"?format=xml", "?format=", "?format=openai&format=anthropic", "?fmt=openai", "?format=%zz"} {
		status, b := get(q)
		var e struct {
			Error struct{ Code protocol.Code } `json:"error"`
		}
		if jsonx.UnmarshalLenient(b, &e); status != 400 || e.Error.Code != protocol.CodeMalformed {
			t.Errorf("GET /v1/tools%s: %d %s, want 400 malformed", q, status, b)
		}
	}
}

func validFunctionName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
