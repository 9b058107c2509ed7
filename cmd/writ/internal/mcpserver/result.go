package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/protocol"
)

// The _meta members of a tool call's result.
const (
	metaIntentID     = "writ/intent_id"
	metaState        = "writ/state"
	metaReceiptIndex = "writ/receipt_index"
	metaLeafHash     = "writ/receipt_leaf_hash"
	metaErrorCode    = "writ/error_code"
)

// answer is the result of a call whose intent reached a final state: the
// tool's output as text (and as structuredContent when it is a JSON
// object) for a completed intent, isError with Writ's code and message for
// any other end; _meta names the intent and its receipt. The receipt's leaf
// hash (which may need a read of the receipt) and the output are read at
// the same time: two round trips to the control plane cost one.
func (s *Server) answer(ctx context.Context, r *client.IntentResponse) *mcp.CallToolResult {
	meta := mcp.Meta{metaIntentID: r.IntentID, metaState: r.State}
	type leaf struct {
		hash string
		err  error
	}
	var leafc chan leaf
	if r.ReceiptIndex != nil {
		meta[metaReceiptIndex] = *r.ReceiptIndex
		leafc = make(chan leaf, 1)
		go func() {
			h, err := s.leafHash(ctx, r)
			leafc <- leaf{h, err}
		}()
	}
	res := s.outcome(ctx, r, meta)
	if leafc != nil {
		if l := <-leafc; l.err == nil {
			res.Meta[metaLeafHash] = l.hash
		} else {
			s.cfg.Logger.Warn("receipt leaf hash", "intent_id", r.IntentID, "error", l.err)
		}
	}
	return res
}

// outcome is answer's result without the leaf hash.
func (s *Server) outcome(ctx context.Context, r *client.IntentResponse, meta mcp.Meta) *mcp.CallToolResult {
	if r.State != "completed" {
		code, msg := protocol.Code(r.State), "the intent ended "+r.State
		if r.Error != nil {
			code, msg = r.Error.Code, r.Error.Message
		}
		res := toolError(r.IntentID, code, msg)
		for k, v := range meta {
			res.Meta[k] = v
		}
		return res
	}
	res := &mcp.CallToolResult{Meta: meta, Content: []mcp.Content{}}
	out, err := s.c.Output(ctx, r.IntentID)
	var ae *client.Error
	switch {
	case errors.As(err, &ae) && ae.Code == "not_found":
		// No output is kept (none written, or past retention).
		return res
	case err != nil:
		res.IsError = true
		meta[metaErrorCode] = string(protocol.CodeUnavailable)
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("intent %s completed, but its output could not be read: %v", r.IntentID, err)})
		return res
	}
	if utf8.Valid(out.Data) {
		res.Content = append(res.Content, &mcp.TextContent{Text: string(out.Data)})
		if jsontext.Value(out.Data).Kind() == '{' && json.Valid(out.Data) {
			res.StructuredContent = json.RawMessage(out.Data)
		}
	} else {
		res.Content = append(res.Content, &mcp.TextContent{Text: "output (base64, not UTF-8): " + base64.StdEncoding.EncodeToString(out.Data)})
	}
	return res
}

// toolError is an isError result: "code: message" as text, the code and
// the intent id (when there is one) in _meta.
func toolError(id string, code protocol.Code, msg string) *mcp.CallToolResult {
	meta := mcp.Meta{metaErrorCode: string(code)}
	text := string(code) + ": " + msg
	if id != "" {
		meta[metaIntentID] = id
		text = fmt.Sprintf("intent %s: %s", id, text)
	}
	return &mcp.CallToolResult{IsError: true, Meta: meta, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// leafHash is the RFC 6962 leaf hash of an intent's receipt, as GET
// /v1/receipts/{index} names it: from the receipt the answer carries, or
// read from the ledger.
func (s *Server) leafHash(ctx context.Context, r *client.IntentResponse) (string, error) {
	leaf := []byte(r.Receipt)
	if len(leaf) == 0 {
		raw, err := s.c.Receipt(ctx, *r.ReceiptIndex)
		if err != nil {
			return "", err
		}
		var rp struct {
			LeafHash string          `json:"leaf_hash"`
			Receipt  json.RawMessage `json:"receipt"`
		}
		if err := json.Unmarshal(raw, &rp); err != nil {
			return "", err
		}
		if rp.LeafHash != "" {
			return rp.LeafHash, nil
		}
		leaf = rp.Receipt
	}
	canon, err := protocol.Canonicalize(leaf)
	if err != nil {
		return "", err
	}
	return ledger.LeafHash(canon).String(), nil
}
