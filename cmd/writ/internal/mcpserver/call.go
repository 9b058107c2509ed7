package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/writhq/writ/client"
	"github.com/writhq/writ/protocol"
)

// maxStep is the longest one request waits for a state (the API's MaxWait).
const maxStep = 60 * time.Second

// firstStep is how long the submission waits for a final state when the
// tool's manifest does not ask for approval: the server waits for a final
// state, so an intent that policy holds for approval is reported after
// this long at the latest. Approval is decided at admission, so a later
// state never needs it.
const firstStep = 2 * time.Second

// callHandler is the handler of one registered tool: each call is one
// signed intent, answered once it reaches a final state.
func (s *Server) callHandler(t protocol.ToolView) mcp.ToolHandler {
	tool, first := t.Name, firstStep
	if t.RequiresApproval {
		first = 0
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		reqID, ok := requestID(req)
		if !ok {
			return nil, errors.New("writ mcp: the request carries no id to make it idempotent")
		}
		params := []byte(req.Params.Arguments)
		if len(params) == 0 || string(params) == "null" {
			params = []byte("{}")
		}
		if jsontext.Value(params).Kind() != '{' {
			return toolError("", protocol.CodeMalformed, "arguments must be a JSON object"), nil
		}
		session, idem := req.Session.ID(), ""
		if session == "" {
			// A sessionless request (streamable HTTP at protocol
			// 2026-07-28): its run is this server's sessionless run, and
			// nothing ties a retry to its first sending, so each call is
			// its own.
			session, idem = s.sessionless, "mcp-"+randomHex(32)
		} else {
			idem = idempotencyKey(session, reqID)
		}
		id, raw, err := s.signIntent(tool, params, s.runID(session), idem)
		if err != nil {
			return toolError("", protocol.CodeMalformed, err.Error()), nil
		}
		var cp *cpTime
		if s.cfg.ReportControlPlaneTime {
			cp = &cpTime{}
		}
		w := waiter{s: s, req: req}
		done := cp.begin()
		r, err := s.c.Submit(ctx, raw, nil, first)
		done()
		for err == nil && !final(r.State) {
			// A retried request is answered with the first intent, whose
			// id is the one to follow.
			id = r.IntentID
			var step time.Duration
			if step, err = w.next(ctx, r); err == nil {
				done = cp.begin()
				r, err = s.c.Intent(ctx, id, step)
				done()
			}
		}
		var res *mcp.CallToolResult
		if err != nil {
			res = w.failed(ctx, id, err)
		} else {
			res = s.answer(ctx, r, cp)
		}
		if cp != nil {
			res.Meta[MetaControlPlaneTime] = cp.Total().Nanoseconds()
		}
		return res, nil
	}
}

// signIntent builds and signs the intent of one call; it returns the
// intent's id and its canonical JSON.
func (s *Server) signIntent(tool string, params []byte, run, idem string) (string, []byte, error) {
	now := s.cfg.Now()
	in := &protocol.Intent{
		Type: protocol.KindIntent.Type(), ID: "int-" + randomHex(16), Tenant: s.cfg.Tenant, Principal: s.cfg.Principal,
		RunID: run, Tool: tool, Params: jsontext.Value(params), IdempotencyKey: idem,
		IssuedAt: protocol.FormatTime(now), ExpiresAt: protocol.FormatTime(now.Add(s.cfg.IntentTTL)), KeyID: s.cfg.KeyID,
	}
	if err := in.SetPayloadHash(); err != nil {
		return "", nil, err
	}
	if err := in.Sign(s.cfg.Secret); err != nil {
		return "", nil, err
	}
	// The server decodes and canonicalizes what it verifies: the body
	// need not be canonical itself.
	b, err := json.Marshal(in)
	return in.ID, b, err
}

// final reports whether an intent's state is one it never leaves.
func final(state string) bool {
	switch state {
	case "completed", "failed", "unknown", "denied", "rejected", "expired", "canceled":
		return true
	}
	return false
}

// waiter follows one call's intent until it is final: it tells the client
// when the intent waits for approval, and bounds that wait.
type waiter struct {
	s        *Server
	req      *mcp.CallToolRequest
	approval time.Time // when the approval wait ends; zero until it starts
	progress float64
}

// errApprovalWait ends a call whose intent is still pending approval.
var errApprovalWait = errors.New("approval wait over")

// next returns how long the next read waits, after telling the client
// about r.
func (w *waiter) next(ctx context.Context, r *client.IntentResponse) (time.Duration, error) {
	if r.State != "pending_approval" {
		return maxStep, nil
	}
	now := time.Now()
	if w.approval.IsZero() {
		w.approval = now.Add(w.s.cfg.ApprovalWait)
	}
	left := w.approval.Sub(now)
	if left <= 0 {
		return 0, errApprovalWait
	}
	w.notify(ctx, r.IntentID, fmt.Sprintf("intent %s awaits approval (waiting up to %s)", r.IntentID, left.Round(time.Second)))
	return min(left, maxStep), nil
}

// notify sends a progress notification when the client asked for them.
func (w *waiter) notify(ctx context.Context, id, msg string) {
	token := w.req.Params.GetProgressToken()
	if token == nil {
		return
	}
	w.progress++
	if err := w.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		Meta: mcp.Meta{metaIntentID: id}, ProgressToken: token, Message: msg, Progress: w.progress}); err != nil {
		w.s.cfg.Logger.Debug("progress notification", "error", err)
	}
}

// failed answers a call that ended before its intent was final: an API
// refusal, an approval wait that ran out, or the client's cancellation.
func (w *waiter) failed(ctx context.Context, id string, err error) *mcp.CallToolResult {
	var ae *client.Error
	switch {
	case errors.Is(err, errApprovalWait):
		return toolError(id, protocol.CodeAwaitingApproval, fmt.Sprintf(
			"intent %s still awaits approval after %s; it stays valid until it expires: ask %s about it later", id, w.s.cfg.ApprovalWait, statusTool))
	case ctx.Err() != nil:
		w.s.cancelIntent(id)
		return toolError(id, protocol.CodeCanceled, "the client cancelled the call")
	case errors.As(err, &ae):
		return toolError(id, ae.Code, ae.Message)
	}
	w.s.cfg.Logger.Warn("tool call", "intent_id", id, "error", err)
	return toolError(id, protocol.CodeUnavailable, "the control plane could not be reached: "+err.Error())
}

// intentCanceler is the client's call that cancels an intent (POST
// /v1/intents/{id}/cancel), found by type assertion: an intent that has not
// started ends canceled, one already dispatched is stopped by its node.
type intentCanceler interface {
	CancelIntent(ctx context.Context, id string) (*client.IntentResponse, error)
}

// cancelTimeout bounds the cancel request of a call the client gave up on
// (the call's own context has ended by then).
const cancelTimeout = 10 * time.Second

// cancelIntent asks the control plane to cancel an intent the client gave
// up on. It is the one call site of (*client.Client).CancelIntent: with a
// client that has no such call, the intent is left as it is (it runs if it
// is approved).
func (s *Server) cancelIntent(id string) {
	if id == "" {
		return
	}
	c, ok := any(s.c).(intentCanceler)
	if !ok {
		s.cfg.Logger.Info("tool call cancelled by the client; this client cannot cancel the intent", "intent_id", id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	r, err := c.CancelIntent(ctx, id)
	if err != nil {
		s.cfg.Logger.Warn("cancelling the intent of a cancelled call", "intent_id", id, "error", err)
		return
	}
	s.cfg.Logger.Info("tool call cancelled by the client", "intent_id", id, "state", r.State)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
