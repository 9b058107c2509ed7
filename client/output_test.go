package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

// TestOutputChecked: Output decodes text and base64 outputs and refuses one
// that is not the bytes the answer's captured hash and size name.
func TestOutputChecked(t *testing.T) {
	binary := []byte{0xff, 0x00, 'x'}
	answers := map[string]protocol.OutputResponse{
		"text":   {Output: "hello", CapturedHash: protocol.HashBytes([]byte("hello")), CapturedBytes: 5},
		"binary": {Output: "/wB4", OutputEncoding: "base64", CapturedHash: protocol.HashBytes(binary), CapturedBytes: 3},
		"wrong":  {Output: "hellO", CapturedHash: protocol.HashBytes([]byte("hello")), CapturedBytes: 5},
		"short":  {Output: "hell", CapturedHash: protocol.HashBytes([]byte("hell")), CapturedBytes: 5},
		"bad64":  {Output: "/wB4=", OutputEncoding: "base64", CapturedHash: protocol.HashBytes(binary), CapturedBytes: 3},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/intents/"), "/output")
		a := answers[id]
		a.IntentID = id
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(a)
	}))
	defer srv.Close()
	c := New(srv.URL, "")
	for id, want := range map[string]string{"text": "hello", "binary": string(binary)} {
		o, err := c.Output(context.Background(), id)
		if err != nil || string(o.Data) != want {
			t.Errorf("%s: got %q, %v; want %q", id, o.Data, err, want)
		}
	}
	for _, id := range []string{"wrong", "short", "bad64"} {
		if o, err := c.Output(context.Background(), id); err == nil {
			t.Errorf("%s: got %q, want an error", id, o.Data)
		}
	}
}
