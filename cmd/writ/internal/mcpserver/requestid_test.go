package mcpserver

import (
	"encoding/json"
	"testing"
)

func TestStampBody(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // the stamped id, "" when the body must come back unchanged
	}{
		{"number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, "n:7"},
		{"string id", `{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo"}}`, "s:7"},
		{"client's own stamp is replaced", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"writ/request-id":"s:other","progressToken":"p"}}}`, "n:1"},
		{"empty params, spaces", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params": { "name" : "echo" } }`, "n:2"},
		{"empty _meta", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{}}}`, "n:3"},
		{"_meta of the client kept", `{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"echo"}}`, `s:a"b`},
		{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, ""},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`, ""},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, ""},
		{"_meta not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":3}}`, ""},
		{"not JSON-RPC", `{"hello":1}`, ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := stampBody([]byte(c.body))
			if c.want == "" {
				if string(got) != c.body {
					t.Fatalf("got %s, want the body unchanged", got)
				}
				return
			}
			var msg struct {
				Params struct {
					Name string         `json:"name"`
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(got, &msg); err != nil {
				t.Fatalf("stamped body %s: %v", got, err)
			}
			if msg.Params.Meta[metaRequestID] != c.want || msg.Params.Name != "echo" {
				t.Fatalf("got %s, want request id %s and name echo kept", got, c.want)
			}
			if c.name == "client's own stamp is replaced" && msg.Params.Meta["progressToken"] != "p" {
				t.Fatalf("got %s: the progress token is lost", got)
			}
		})
	}
}

func TestIdempotencyKeyAndRun(t *testing.T) {
	s := &Server{}
	if idempotencyKey("a", "n:1") == idempotencyKey("a", "s:1") || idempotencyKey("a", "n:1") == idempotencyKey("b", "n:1") {
		t.Fatal("distinct sessions or request ids share an idempotency key")
	}
	if got, want := idempotencyKey("a", "n:1"), idempotencyKey("a", "n:1"); got != want {
		t.Fatalf("got %s and %s for the same request", got, want)
	}
	if s.runID("a") == s.runID("b") || s.runID("a") == "a" {
		t.Fatal("runs of sessions must differ and not be the session id")
	}
	s.cfg.Run = "fixed"
	if s.runID("a") != "fixed" {
		t.Fatal("--run is not every session's run")
	}
}
