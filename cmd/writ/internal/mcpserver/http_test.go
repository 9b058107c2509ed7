package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/writhq/writ/client"
)

// TestHandlerRefuses: the HTTP transport refuses a request without the
// token, with another, or from an origin not allowed, before anything
// reaches the MCP server; an allowed origin with the token gets through.
func TestHandlerRefuses(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Client, cfg.Tenant, cfg.Principal, cfg.KeyID, cfg.Secret = client.New("http://127.0.0.1:1", ""), "t", "p", "k", []byte("secret")
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.Repeat("t", MinTokenLen)
	if _, err := s.Handler(HTTPConfig{Token: "short"}); err == nil {
		t.Fatal("a short token was accepted")
	}
	h, err := s.Handler(HTTPConfig{Token: token, AllowedOrigins: []string{"http://localhost:3000"}})
	if err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name, auth, origin string
		status             int
		code               string
	}{
		{"no token", "", "", 401, "unauthorized"},
		{"another token", "Bearer " + strings.Repeat("u", MinTokenLen), "", 401, "unauthorized"},
		{"a prefix of the token", "Bearer " + token[:MinTokenLen-1], "", 401, "unauthorized"},
		{"basic", "Basic " + token, "", 401, "unauthorized"},
		{"foreign origin", "Bearer " + token, "http://evil.example", 403, "forbidden_origin"},
		{"foreign origin without token", "", "http://evil.example", 403, "forbidden_origin"},
		{"allowed origin", "Bearer " + token, "http://localhost:3000", 200, ""},
		{"no origin", "Bearer " + token, "", 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", strings.NewReader(init))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.status || (c.code != "" && !strings.Contains(w.Body.String(), `"code":"`+c.code+`"`)) {
				t.Fatalf("got %d %s, want %d %s", w.Code, w.Body, c.status, c.code)
			}
			if c.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}
