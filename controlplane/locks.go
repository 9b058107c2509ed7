package controlplane

import (
	"context"
	"crypto/rand"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// MaxLockTTL bounds a lock's time to live; a lock without one holds until
// it is deleted.
const MaxLockTTL = 365 * 24 * time.Hour

func lockView(l fsm.Lock) protocol.LockView {
	v := protocol.LockView{ID: l.ID, Tenant: l.Tenant, Principal: l.Principal, Tool: l.Tool, Node: l.Node, Reason: l.Reason,
		CreatedAt: protocol.FormatTime(l.CreatedAt)}
	if !l.ExpiresAt.IsZero() {
		v.ExpiresAt = protocol.FormatTime(l.ExpiresAt)
	}
	return v
}

// parseLockRequest reads the body of POST /v1/admin/locks: one JSON object
// with no unknown member, checked.
func parseLockRequest(body []byte) (protocol.LockRequest, *apiError) {
	var q protocol.LockRequest
	// One JSON value and nothing after it (Unmarshal refuses trailing data).
	if err := jsonx.UnmarshalStrict(body, &q); err != nil {
		return protocol.LockRequest{}, refusal(protocol.CodeMalformed, "a lock is one JSON object {\"tenant\"?, \"principal\"?, \"tool\"?, \"node\"?, \"ttl_seconds\"?, \"reason\"}")
	}
	return q, checkLock(q)
}

// check refuses a lock that names nothing, a name that is not an id, a
// reason that is empty or longer than 512 bytes, or a TTL out of range.
func checkLock(q protocol.LockRequest) *apiError {
	switch {
	case q.Tenant == "" && q.Principal == "" && q.Tool == "" && q.Node == "":
		return refusal(protocol.CodeMalformed, "a lock names a tenant, a principal, a tool or a node")
	case !plainText(q.Reason, 512):
		return refusal(protocol.CodeMalformed, "a lock needs a reason of at most 512 bytes")
	case q.TTLSeconds < 0 || time.Duration(q.TTLSeconds)*time.Second > MaxLockTTL:
		return refusal(protocol.CodeMalformed, "ttl_seconds must be between 0 (none) and a year")
	}
	for _, v := range []string{q.Tenant, q.Tool, q.Node} {
		if v != "" && !validID(v) {
			return refusal(protocol.CodeMalformed, "tenant, tool and node must be ids (1-128 of A-Z a-z 0-9 . _ : -)")
		}
	}
	if q.Principal != "" && !plainText(q.Principal, 256) {
		return refusal(protocol.CodeMalformed, "principal must be 1-256 bytes of UTF-8 without control characters")
	}
	return nil
}

// handleCreateLock makes a lock through Raft; from its commit on nothing it
// matches is admitted or dispatched, and what it matches is stopped.
func (ep adminAPI) handleCreateLock(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	body, aerr := readBody(w, r, 1<<20)
	if aerr != nil {
		return nil, aerr
	}
	q, aerr := parseLockRequest(body)
	if aerr != nil {
		return nil, aerr
	}
	l, aerr := ep.createLock(r.Context(), q, ep.srv.applyAdminChange)
	if aerr != nil {
		return nil, aerr
	}
	return protocol.LockResponse{Lock: lockView(l)}, nil
}

// createLock makes a checked lock through apply (on the leader, or relayed
// from the dashboard of any server), recorded with the context's actor.
func (ep adminAPI) createLock(ctx context.Context, q protocol.LockRequest, apply func(context.Context, fsm.MsgType, any) (fsm.Result, error)) (fsm.Lock, *apiError) {
	if aerr := checkLock(q); aerr != nil {
		return fsm.Lock{}, aerr
	}
	now := ep.srv.now()
	l := fsm.Lock{ID: "lck-" + rand.Text()[:16], Tenant: q.Tenant, Principal: q.Principal, Tool: q.Tool, Node: q.Node,
		Reason: q.Reason, By: actorOf(ctx)}
	if q.TTLSeconds > 0 {
		l.ExpiresAt = now.Add(time.Duration(q.TTLSeconds) * time.Second)
	}
	res, err := apply(ctx, fsm.MsgPutLock, fsm.PutLock{At: now, Lock: l})
	if err != nil {
		return fsm.Lock{}, raftError(err)
	}
	if res.Err != nil {
		return fsm.Lock{}, refusal(res.Err.Code, res.Err.Message)
	}
	ep.srv.log.Warn("lock created", "lock", l.ID, "tenant", l.Tenant, "principal", l.Principal, "tool", l.Tool, "node", l.Node,
		"expires_at", l.ExpiresAt, "reason", l.Reason, "by", l.By)
	for _, have := range ep.srv.reads.Locks() {
		if have.ID == l.ID {
			return have, nil
		}
	}
	l.CreatedAt = now
	return l, nil
}

func (ep adminAPI) handleListLocks(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	out := []protocol.LockView{}
	for _, l := range ep.srv.reads.Locks() {
		out = append(out, lockView(l))
	}
	return protocol.LockList{Locks: out}, nil
}

func (ep adminAPI) handleDeleteLock(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	if aerr := ep.deleteLock(r.Context(), r.PathValue("id"), ep.srv.applyAdminChange); aerr != nil {
		return nil, aerr
	}
	return map[string]bool{"ok": true}, nil
}

// deleteLock removes a lock through apply, recorded with the context's actor.
func (ep adminAPI) deleteLock(ctx context.Context, id string, apply func(context.Context, fsm.MsgType, any) (fsm.Result, error)) *apiError {
	res, err := apply(ctx, fsm.MsgDeleteLock, fsm.DeleteLock{At: ep.srv.now(), ID: id})
	if err != nil {
		return raftError(err)
	}
	if res.Err != nil {
		return refusal(res.Err.Code, res.Err.Message)
	}
	ep.srv.log.Warn("lock deleted", "lock", id, "by", actorOf(ctx))
	return nil
}

// plainText reports whether v is 1 to max bytes of UTF-8 without control
// characters: text that goes into logs and answers as it is.
func plainText(v string, max int) bool {
	if v == "" || len(v) > max || !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) {
			return false
		}
	}
	return true
}
