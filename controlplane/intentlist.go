package controlplane

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
)

// GET /v1/intents lists intent summaries, newest first (docs/controlplane.md).
// A read signed with a tenant's key and an auditor token of one tenant list
// that tenant's intents; an auditor of all tenants and the admin token list
// every tenant's, or one with tenant=.

const (
	// intentListDefault and intentListMax bound a page.
	intentListDefault = 50
	intentListMax     = 500
	// intentListValueMax bounds a filter's value.
	intentListValueMax = 256
)

// intentStates are the states a state= filter may name.
var intentStates = map[string]bool{
	fsm.StatePendingApproval: true, fsm.StateQueued: true, fsm.StateDispatched: true, fsm.StateCompleted: true,
	fsm.StateFailed: true, fsm.StateDenied: true, fsm.StateRejected: true, fsm.StateExpired: true, fsm.StateUnknown: true, fsm.StateCanceled: true,
}

// intentListParams are the query parameters GET /v1/intents knows.
var intentListParams = map[string]bool{"tenant": true, "run": true, "principal": true, "tool": true, "state": true,
	"since": true, "limit": true, "cursor": true}

// parseIntentQuery reads GET /v1/intents' query into a filter. Every value
// is checked: an unknown parameter, a repeated one, an empty or overlong
// value, an unknown state, a since that is not RFC 3339, a limit outside
// 1..500 or a cursor this server did not write is malformed.
func parseIntentQuery(q url.Values) (fsm.IntentFilter, *apiError) {
	f := fsm.IntentFilter{Limit: intentListDefault}
	bad := func(msg string) (fsm.IntentFilter, *apiError) {
		return fsm.IntentFilter{}, refusal(protocol.CodeMalformed, msg)
	}
	for k, vs := range q {
		if !intentListParams[k] {
			return bad("unknown query parameter " + strconv.Quote(k))
		}
		if len(vs) != 1 {
			return bad("query parameter " + k + " is given more than once")
		}
		if !filterValue(vs[0]) {
			return bad("query parameter " + k + " is empty, longer than 256 bytes or not printable UTF-8")
		}
	}
	f.Tenant, f.Run, f.Principal, f.Tool = q.Get("tenant"), q.Get("run"), q.Get("principal"), q.Get("tool")
	if s := q.Get("state"); s != "" {
		if !intentStates[s] {
			return bad("unknown state " + strconv.Quote(s))
		}
		f.State = s
	}
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return bad("since is not an RFC 3339 time")
		}
		f.Since = t
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > intentListMax {
			return bad("limit is not a number from 1 to 500")
		}
		f.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, ok := decodeIntentCursor(s)
		if !ok {
			return bad("cursor is not one this server wrote")
		}
		f.After = c
	}
	return f, nil
}

func filterValue(s string) bool {
	if s == "" || len(s) > intentListValueMax || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// The cursor is base64url (no padding) of "<admitted_at unix nanoseconds>.<intent id>":
// where the previous page ended.
func encodeIntentCursor(c *fsm.IntentCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixNano(), 10) + "." + c.ID))
}

func decodeIntentCursor(s string) (*fsm.IntentCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	ns, id, ok := strings.Cut(string(b), ".")
	if !ok || !filterValue(id) {
		return nil, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || n < 0 {
		return nil, false
	}
	return &fsm.IntentCursor{At: time.Unix(0, n).UTC(), ID: id}, true
}

func (ep intentsAPI) handleListIntents(w http.ResponseWriter, r *http.Request) {
	c, aerr := ep.srv.auth().callerOf(r)
	if aerr != nil {
		ep.srv.refuse(w, r, aerr)
		return
	}
	switch c.kind {
	case callerTenant, callerAuditor, callerAdmin:
	default:
		ep.srv.refuse(w, r, refusal(protocol.CodeUnauthorized, "intents are listed with a read signed by a tenant's orchestrator key, an auditor token or the admin token"))
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, protocol.CodeMalformed, "the query is not URL-encoded")
		return
	}
	f, aerr := parseIntentQuery(q)
	if aerr != nil {
		writeError(w, aerr.code, aerr.msg)
		return
	}
	page := protocol.IntentPage{Intents: []protocol.IntentSummary{}}
	if !c.all {
		if f.Tenant != "" && f.Tenant != c.tenant {
			// Another tenant's intents are never listed: none.
			writeJSON(w, http.StatusOK, page)
			return
		}
		f.Tenant = c.tenant
	}
	list, next := ep.srv.reads.ListIntents(f)
	for _, in := range list {
		page.Intents = append(page.Intents, intentSummary(in))
	}
	if next != nil {
		page.Next = encodeIntentCursor(next)
	}
	writeJSON(w, http.StatusOK, page)
}

func intentSummary(in fsm.Intent) protocol.IntentSummary {
	s := protocol.IntentSummary{ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID, Tool: in.Tool,
		State: in.State, AdmittedAt: in.AdmittedAt, UpdatedAt: in.UpdatedAt, ReceiptIndex: in.Receipt}
	if in.Error != nil {
		s.ErrorCode = in.Error.Code
	}
	return s
}
