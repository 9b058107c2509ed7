package controlplane_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/protocol"
)

// signIn signs in at /ui/signin and returns the session cookie, or nil and
// the status when sign-in fails.
func signIn(t *testing.T, base, token string) (*http.Cookie, int) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/ui/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		return nil, resp.StatusCode
	}
	return resp.Cookies()[0], resp.StatusCode
}

// signedIn reports whether the cookie's session still shows a page.
func signedIn(t *testing.T, base string, c *http.Cookie) bool {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/ui/", nil)
	req.AddCookie(c)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestSessionCap is the session-cap test: a viewer token signing in in a
// loop keeps only its newest sessions and never locks the admins out; an
// admin lists tokens and sessions (no secret, no hash) and revokes one.
func TestSessionCap(t *testing.T) {
	t.Parallel()
	d := startDevWith(t, func(c *controlplane.Config) { c.MaxSessionsPerUser = 3 })
	ctx := context.Background()
	base := "http://" + d.s.Addr().String()
	var viewer struct{ Token, ID string }
	if err := d.admin.AdminJSON(ctx, "POST", "tokens", []byte(`{"role":"viewer"}`), &viewer); err != nil {
		t.Fatal(err)
	}
	admin, status := signIn(t, base, d.creds.AdminToken)
	if admin == nil {
		t.Fatalf("the admin token does not sign in: HTTP %d", status)
	}
	var cookies []*http.Cookie
	for i := range 40 {
		c, status := signIn(t, base, viewer.Token)
		if c == nil {
			t.Fatalf("viewer sign-in %d: HTTP %d", i, status)
		}
		cookies = append(cookies, c)
	}
	for i, c := range cookies {
		if want := i >= len(cookies)-3; signedIn(t, base, c) != want {
			t.Errorf("viewer session %d of %d: signed in %v, want %v (the cap keeps the 3 newest)", i, len(cookies), !want, want)
		}
	}
	if !signedIn(t, base, admin) {
		t.Fatal("the viewer's sign-ins closed the admin's session")
	}
	if c, status := signIn(t, base, d.creds.AdminToken); c == nil {
		t.Fatalf("after the viewer's loop the admin cannot sign in: HTTP %d", status)
	}

	var sessions struct {
		Sessions []protocol.SessionInfo `json:"sessions"`
	}
	raw := adminGet(t, d, "sessions", &sessions)
	for _, c := range cookies {
		if strings.Contains(raw, c.Value) {
			t.Fatal("the session list carries a cookie")
		}
	}
	if strings.Contains(raw, "sha256:") {
		t.Fatalf("the session list carries hashes: %s", raw)
	}
	var mine []protocol.SessionInfo
	for _, s := range sessions.Sessions {
		if s.User == viewer.ID {
			mine = append(mine, s)
		}
	}
	if len(sessions.Sessions) != 5 || len(mine) != 3 {
		t.Fatalf("sessions: got %d (%d of the viewer), want 2 admin and 3 viewer: %s", len(sessions.Sessions), len(mine), raw)
	}
	var tokens struct {
		Tokens []protocol.TokenInfo `json:"tokens"`
	}
	raw = adminGet(t, d, "tokens", &tokens)
	if strings.Contains(raw, "sha256:") || strings.Contains(raw, viewer.Token) {
		t.Fatalf("the token list carries a secret or hash: %s", raw)
	}
	found := false
	for _, tk := range tokens.Tokens {
		if tk.ID == viewer.ID {
			found = tk.Role == "viewer" && tk.Sessions == 3
		}
	}
	if !found {
		t.Fatalf("the token list lacks the viewer with its 3 sessions: %s", raw)
	}

	// Revoking the newest viewer session signs it out; unknown ids and
	// callers without the admin token change nothing.
	newest := mine[len(mine)-1]
	if err := client.New(base, "").Admin(ctx, "DELETE", "sessions/"+newest.ID, nil); apiCode(err) != "unauthorized" {
		t.Fatalf("revoking without the admin token: got %v, want unauthorized", err)
	}
	if err := d.admin.Admin(ctx, "DELETE", "sessions/0123456789abcdef", nil); apiCode(err) != "not_found" {
		t.Fatalf("revoking an unknown session: got %v, want not_found", err)
	}
	if !signedIn(t, base, cookies[len(cookies)-1]) {
		t.Fatal("a refused revocation signed the session out")
	}
	if err := d.admin.Admin(ctx, "DELETE", "sessions/"+newest.ID, nil); err != nil {
		t.Fatal(err)
	}
	if signedIn(t, base, cookies[len(cookies)-1]) {
		t.Fatal("a revoked session still shows pages")
	}
	if !signedIn(t, base, cookies[len(cookies)-2]) || !signedIn(t, base, admin) {
		t.Fatal("revoking one session signed out others")
	}
}

// adminGet reads an admin list and returns its body.
func adminGet(t *testing.T, d *devServer, path string, out any) string {
	t.Helper()
	var raw jsontext.Value
	if err := d.admin.AdminJSON(context.Background(), "GET", path, nil, &raw); err != nil {
		t.Fatal(err)
	}
	if err := jsonx.UnmarshalLenient(raw, out); err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
