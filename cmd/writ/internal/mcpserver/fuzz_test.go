package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStampBody: any body comes back unchanged or as one tools/call request
// with the same id and method, carrying its id in params._meta.
func FuzzStampBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"_meta":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}]`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := stampBody(body)
		if string(got) == string(body) {
			return
		}
		msg, err := jsonrpc.DecodeMessage(got)
		if err != nil {
			t.Fatalf("stamped %q into %q, which does not decode: %v", body, got, err)
		}
		orig, _ := jsonrpc.DecodeMessage(body)
		req, ok := msg.(*jsonrpc.Request)
		o, ok2 := orig.(*jsonrpc.Request)
		if !ok || !ok2 || req.Method != "tools/call" || req.ID != o.ID {
			t.Fatalf("stamped %q into %q: another message", body, got)
		}
		var params struct {
			Meta map[string]any `json:"_meta"`
		}
		want, _ := requestKey(o.ID)
		if json.Unmarshal(req.Params, &params) != nil || params.Meta[metaRequestID] != want {
			t.Fatalf("stamped %q into %q: no request id %s", body, got, want)
		}
	})
}

// FuzzInsertStamp: where the insertion into the params' bytes applies, it
// means what decoding and encoding them again means.
func FuzzInsertStamp(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{}}`, `{}`, ` { "_meta" : { } , "a" : 1 } `, `{"_meta":{"progressToken":"p"},"name":"x"}`,
		`{"_meta":{"writ/request-id":"s:x"}}`, `{"_meta":null}`, `{"a":1,"a":2}`, `{"_meta":{}}{}`, `[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		q, _ := json.Marshal("n:7")
		got, ok := insertStamp(params, append([]byte(`"`+metaRequestID+`":`), q...))
		if !ok {
			return
		}
		want, ok := remarshalStamp(params, q)
		if !ok {
			t.Fatalf("inserted into %q, which does not decode as an object", params)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("inserted into %q: %q does not decode: %v", params, got, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("inserted into %q: %s, decoded and encoded: %s", params, got, want)
		}
	})
}
