package controlplane_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/internal/jsonx"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestDashboardTokensAndSessions issues tokens through the admin API, signs
// in with them at /ui/signin, and revokes one, which ends its session.
func TestDashboardTokensAndSessions(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	base := "http://" + d.s.Addr().String()
	for _, bad := range []string{`{"role":"root"}`, `{"role":"approver","tenant":"dev"}`, `{"role":"viewer","approver":"x"}`, `{"role":"node"}`} {
		var out map[string]any
		if err := d.admin.AdminJSON(ctx, "POST", "tokens", []byte(bad), &out); err == nil {
			t.Errorf("token %s was issued", bad)
		}
	}
	if err := client.New(base, "").AdminJSON(ctx, "POST", "tokens", []byte(`{"role":"admin"}`), nil); err == nil {
		t.Error("a token was issued without the admin token")
	}
	var tok struct{ Token, ID string }
	if err := d.admin.AdminJSON(ctx, "POST", "tokens", []byte(`{"role":"approver","tenant":"dev","approver":"dev-approver"}`), &tok); err != nil {
		t.Fatal(err)
	}
	signIn := func(token string) *http.Cookie {
		req, _ := http.NewRequest("POST", base+"/ui/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
			return nil
		}
		return resp.Cookies()[0]
	}
	get := func(c *http.Cookie, path string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(c)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if signIn(tok.Token[:len(tok.Token)-2]+"xx") != nil || signIn("wu1.nope") != nil {
		t.Fatal("a wrong token signed in")
	}
	c := signIn(tok.Token)
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("sign-in cookie: %+v", c)
	}
	if s := get(c, "/ui/approvals"); s != 200 {
		t.Fatalf("approvals page: %d", s)
	}
	if admin := signIn(d.creds.AdminToken); admin == nil || get(admin, "/ui/fleet") != 200 {
		t.Fatal("the admin token does not sign in")
	}
	if err := d.admin.Admin(ctx, "DELETE", "tokens/"+tok.ID, nil); err != nil {
		t.Fatal(err)
	}
	if s := get(c, "/ui/approvals"); s != http.StatusSeeOther {
		t.Fatalf("after revoking its token the session still shows pages: %d", s)
	}
	if signIn(tok.Token) != nil {
		t.Fatal("a revoked token signed in")
	}
}

// TestEventsStream reads /v1/events with the admin token: an intent
// submitted through the API is an event with its Raft index.
func TestEventsStream(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	u := "ws://" + d.s.Addr().String() + "/v1/events"
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"Authorization": {"Bearer " + d.creds.AdminToken}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := d.c.Submit(context.Background(), d.intent(t, "echo_approval", `{"msg":"hi"}`), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		conn.SetReadDeadline(deadline)
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Type, ID string
			Index    uint64
			Seq      uint64
			Intent   struct{ State string }
		}
		jsonx.UnmarshalLenient(b, &ev)
		if ev.Type == "intent" && ev.ID == resp.IntentID {
			if ev.Index == 0 || ev.Seq == 0 || ev.Intent.State != "pending_approval" {
				t.Fatalf("event %s", b)
			}
			return
		}
	}
	t.Fatal("no event of the intent")
}
