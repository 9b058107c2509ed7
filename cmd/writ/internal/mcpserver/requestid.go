package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaRequestID is the _meta member through which a tools/call request's
// JSON-RPC id reaches the tool handler (the SDK keeps it to itself). Every
// tools/call is stamped on its way in, over any value the client put there:
// the id is what makes a client's retry of a request the same intent.
const metaRequestID = "writ/request-id"

// requestKey is the text of a request id: "s:" and a string id, or "n:"
// and a number, so that the string "1" and the number 1 stay apart.
func requestKey(id jsonrpc.ID) (string, bool) {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v, true
	case int64:
		return "n:" + strconv.FormatInt(v, 10), true
	}
	return "", false
}

// stampRequest returns msg with its request id in params._meta when it is a
// tools/call request whose params are an object; any other message is
// returned as it came, and a tools/call left unstamped is refused by the
// handler (requestID).
func stampRequest(msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.ID.IsValid() {
		return msg
	}
	key, ok := requestKey(req.ID)
	if !ok {
		return msg
	}
	b, ok := stampParams(req.Params, key)
	if !ok {
		return msg
	}
	stamped := *req
	stamped.Params = b
	return &stamped
}

// stampParams returns the params of a tools/call with key as
// _meta[metaRequestID]; ok is false when params is not an object or its
// _meta is not one. The common case — params strict JSON, the member not
// there yet — is an insertion into the bytes as they came; anything else
// (duplicate names, invalid UTF-8, the member already set by the client)
// is decoded and encoded again.
func stampParams(params json.RawMessage, key string) ([]byte, bool) {
	q, _ := json.Marshal(key)
	if b, ok := insertStamp(params, append([]byte(`"`+metaRequestID+`":`), q...)); ok {
		return b, true
	}
	return remarshalStamp(params, q)
}

// remarshalStamp is stampParams by decoding params and encoding them again,
// with q, the JSON string of the key, as _meta[metaRequestID].
func remarshalStamp(params json.RawMessage, q []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil || m == nil {
		return nil, false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return nil, false
		}
	}
	meta[metaRequestID] = q
	m["_meta"], _ = json.Marshal(meta)
	b, err := json.Marshal(m)
	return b, err == nil
}

// insertStamp writes member (a name and its value) into the _meta object
// of params, adding _meta when there is none. It declines (false) unless
// params is one strict JSON object whose _meta, if any, is an object
// without the member's name.
func insertStamp(params, member []byte) ([]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(params))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	open := int(dec.InputOffset())
	members, meta, metaEnd := 0, -1, -1
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		isMeta := tok.String() == "_meta"
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		members++
		if isMeta {
			if v.Kind() != '{' {
				return nil, false
			}
			metaEnd = int(dec.InputOffset())
			meta = metaEnd - len(v)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false // something after the object
	}
	at, sep := open, members > 0
	if meta >= 0 {
		n, ok := objectMembers(params[meta:metaEnd], metaRequestID)
		if !ok {
			return nil, false
		}
		at, sep = meta+1, n > 0
	}
	out := make([]byte, 0, len(params)+len(member)+12)
	out = append(out, params[:at]...)
	if meta < 0 {
		out = append(append(append(out, `"_meta":{`...), member...), '}')
	} else {
		out = append(out, member...)
	}
	if sep {
		out = append(out, ',')
	}
	return append(out, params[at:]...), true
}

// objectMembers counts the members of the JSON object obj; ok is false when
// one is named name.
func objectMembers(obj []byte, name string) (n int, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.ReadToken(); err != nil {
		return 0, false
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil || tok.String() == name {
			return 0, false
		}
		if err := dec.SkipValue(); err != nil {
			return 0, false
		}
		n++
	}
	return n, true
}

// stampBody is stampRequest for one HTTP request body; a body that is not
// one JSON-RPC message is returned as it is, for the SDK to refuse.
func stampBody(body []byte) []byte {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return body
	}
	stamped := stampRequest(msg)
	if stamped == msg {
		return body
	}
	b, err := jsonrpc.EncodeMessage(stamped)
	if err != nil {
		return body
	}
	return b
}

// requestID is the stamped request id of a tools/call.
func requestID(req *mcp.CallToolRequest) (string, bool) {
	if req.Params == nil {
		return "", false
	}
	s, ok := req.Params.Meta[metaRequestID].(string)
	return s, ok && s != ""
}

// stampTransport stamps the tools/call requests read from a transport, and
// names its connection's session when the transport does not (stdio): a
// random id, one per connection.
type stampTransport struct{ mcp.Transport }

func (t stampTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	id := c.SessionID()
	if id == "" {
		id = newSessionID()
	}
	return &stampConn{Connection: c, id: id}, nil
}

type stampConn struct {
	mcp.Connection
	id string
}

func (c *stampConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	return stampRequest(msg), nil
}

func (c *stampConn) SessionID() string { return c.id }

// newSessionID is a random session id, as the streamable transport makes
// them.
func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
