package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"

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
	var params map[string]json.RawMessage
	if json.Unmarshal(req.Params, &params) != nil || params == nil {
		return msg
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return msg
		}
	}
	meta[metaRequestID], _ = json.Marshal(key)
	params["_meta"], _ = json.Marshal(meta)
	b, err := json.Marshal(params)
	if err != nil {
		return msg
	}
	stamped := *req
	stamped.Params = b
	return &stamped
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
