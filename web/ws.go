package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/writhq/writ/protocol"
)

const (
	writeWait    = 10 * time.Second
	pingEvery    = 25 * time.Second
	recheckEvery = 30 * time.Second
)

// serveEvents is GET /v1/events: a WebSocket of events, resumed after
// ?epoch=E&since=N (the last event seen). It takes the session cookie, from
// a page of this origin, or an admin token as a bearer. Each event is sent
// only to clients whose principal may view its page and tenant.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	secret, p, ok := d.eventsPrincipal(r)
	if !ok {
		writeError(w, protocol.CodeUnauthorized, "sign in, or send an admin token")
		return
	}
	since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	up := websocket.Upgrader{
		ReadBufferSize: 1024, WriteBufferSize: 4096,
		// Checked in eventsPrincipal: a cookie only from this origin.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer conn.Close()
	sub, backlog, reset := d.hub.subscribe(r.URL.Query().Get("epoch"), since)
	defer d.hub.unsubscribe(sub)
	conn.SetReadLimit(512)
	go func() {
		// Clients send nothing; reading notices the close.
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				sub.drop()
				return
			}
		}
	}()
	v := newViewFilter(d, p)
	send := func(ev *Event) bool {
		if !v.allowed(ev) {
			return true
		}
		conn.SetWriteDeadline(time.Now().Add(writeWait))
		return conn.WriteMessage(websocket.TextMessage, ev.bytes()) == nil
	}
	if reset {
		epoch, seq := d.hub.position()
		ev := &Event{Type: "reset", Epoch: epoch, Seq: seq}
		if !send(ev) {
			return
		}
	}
	for _, ev := range backlog {
		if !send(ev) {
			return
		}
	}
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	recheck := time.NewTicker(recheckEvery)
	defer recheck.Stop()
	for {
		select {
		case <-sub.closed:
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "too slow or server stopping"), time.Now().Add(time.Second))
			return
		case ev := <-sub.ch:
			if !send(ev) {
				return
			}
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return
			}
		case <-recheck.C:
			// A session signed out, revoked or expired ends its stream.
			if secret != "" {
				if q, ok := d.cfg.Backend.Session(secret); !ok || !q.ExpiresAt.After(time.Now()) {
					conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "session ended"), time.Now().Add(time.Second))
					return
				}
			}
		}
	}
}

// eventsPrincipal authenticates /v1/events: a bearer admin token, or the
// session cookie sent by a page of this origin.
func (d *Dashboard) eventsPrincipal(r *http.Request) (string, Principal, bool) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if !d.cfg.Backend.AdminToken(token) {
			return "", Principal{}, false
		}
		return "", Principal{User: "admin-token", Role: "admin"}, true
	}
	if r.Header.Get("Origin") == "" || !sameOrigin(r) {
		return "", Principal{}, false
	}
	secret, p, ok := d.session(r)
	return secret, p, ok
}

// viewFilter remembers, for one client, what its principal may view.
type viewFilter struct {
	d    *Dashboard
	p    Principal
	seen map[[2]string]bool
}

func newViewFilter(d *Dashboard, p Principal) *viewFilter {
	return &viewFilter{d: d, p: p, seen: map[[2]string]bool{}}
}

func (v *viewFilter) allowed(ev *Event) bool {
	if ev.Type == "reset" {
		return true
	}
	k := [2]string{ev.Page, ev.Tenant}
	ok, known := v.seen[k]
	if !known {
		ok = v.d.cfg.Backend.Allowed(v.p, "view", ev.Page, ev.Tenant, "")
		v.seen[k] = ok
	}
	return ok
}
