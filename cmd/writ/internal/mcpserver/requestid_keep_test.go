package mcpserver

import (
	"strings"
	"testing"
)

// TestStampKeepsArguments: when params are decoded and encoded again (the
// client set the member itself, or names repeat), the arguments reach the
// tool as the client wrote them: repeated names and escapes kept.
func TestStampKeepsArguments(t *testing.T) {
	for _, args := range []string{`{"a":1,"a":2}`, `{"s":"\u00e9\/"}`} {
		for _, meta := range []string{``, `,"_meta":{"writ/request-id":"s:other"}`} {
			body := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":` + args + meta + `}}`
			got := stampBody([]byte(body))
			if !strings.Contains(string(got), `"arguments":`+args) || !strings.Contains(string(got), `"n:4"`) {
				t.Errorf("%s:\nstamped %s, want the arguments kept and request id n:4", body, got)
			}
		}
	}
}
