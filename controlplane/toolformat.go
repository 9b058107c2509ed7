package controlplane

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// The function-calling formats GET /v1/tools?format= gives the catalog in.
const (
	formatOpenAI    = "openai"
	formatAnthropic = "anthropic"
)

// parseToolsQuery reads GET /v1/tools' query: nothing, or format=openai or
// format=anthropic once. Anything else is malformed.
func parseToolsQuery(raw string) (string, *apiError) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", refusal(protocol.CodeMalformed, "the query is not URL-encoded")
	}
	for k, vs := range q {
		if k != "format" {
			return "", refusal(protocol.CodeMalformed, "unknown query parameter "+strconv.Quote(k))
		}
		if len(vs) != 1 {
			return "", refusal(protocol.CodeMalformed, "query parameter format is given more than once")
		}
	}
	switch f := q.Get("format"); f {
	case "", formatOpenAI, formatAnthropic:
		if _, given := q["format"]; given && f == "" {
			return "", refusal(protocol.CodeMalformed, "format is empty: want openai or anthropic")
		}
		return f, nil
	default:
		if len(f) > 64 {
			f = f[:64]
		}
		return "", refusal(protocol.CodeMalformed, "format "+strconv.Quote(f)+" is unknown: want openai or anthropic")
	}
}

// functionCatalog is the catalog as a function-calling API's tool list.
// Those APIs allow only [A-Za-z0-9_-] in a name, at most 64: Names maps
// each name given back to the Writ tool, which is what an intent names.
type functionCatalog struct {
	Format string            `json:"format"`
	Tools  []jsontext.Value  `json:"tools"`
	Names  map[string]string `json:"names"`
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  jsontext.Value `json:"parameters"`
}

type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema jsontext.Value `json:"input_schema"`
}

// functionTools converts the catalog (sorted by name) into format.
func functionTools(format string, tools []protocol.ToolView) functionCatalog {
	c := functionCatalog{Format: format, Tools: []jsontext.Value{}, Names: map[string]string{}}
	for _, t := range tools {
		name := functionName(t.Name, c.Names)
		c.Names[name] = t.Name
		var v any = anthropicTool{name, t.Description, t.InputSchema}
		if format == formatOpenAI {
			v = openAITool{"function", openAIFunction{name, t.Description, t.InputSchema}}
		}
		b, err := jsonx.Marshal(v)
		if err != nil {
			continue // a registered schema is valid JSON
		}
		c.Tools = append(c.Tools, b)
	}
	return c
}

// functionName is a Writ tool name as a function name: each '.' as "__";
// a name that is then too long, or already taken by another tool, is cut
// and given a suffix from the hash of the Writ name.
func functionName(name string, taken map[string]string) string {
	f := strings.ReplaceAll(name, ".", "__")
	if _, dup := taken[f]; !dup && len(f) <= 64 {
		return f
	}
	sum := sha256.Sum256([]byte(name))
	return f[:min(len(f), 55)] + "_" + hex.EncodeToString(sum[:4])
}
