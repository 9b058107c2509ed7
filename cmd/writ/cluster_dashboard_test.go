package main_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestClusterDashboardSessions signs in to the dashboard on a follower of a
// 3-server cluster over TLS, uses the session on the other follower, signs
// out there, and finds the session ended on the first: tokens and sessions
// are replicated, and a follower's dashboard writes reach the leader.
func TestClusterDashboardSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("not in -short: three writ servers")
	}
	c := startTestCluster(t)
	leader := c.waitLeader(30 * time.Second)
	var f []int
	for i := range c.srv {
		if i != leader {
			f = append(f, i)
		}
	}
	var tok struct{ Token string }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.client(f[0]).AdminJSON(ctx, "POST", "tokens", []byte(`{"role":"viewer"}`), &tok); err != nil {
		t.Fatalf("a token created through a follower: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.ca)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := func(i int) string { return "https://" + c.srv[i].api }
	do := func(i int, method, path, cookie string, form url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base(i)+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base(i))
		if cookie != "" {
			req.Header.Set("Cookie", "__Host-writ_session="+cookie)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var cookie *http.Cookie
	// The follower may not have applied the token yet: retry briefly.
	for deadline := time.Now().Add(10 * time.Second); cookie == nil && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp := do(f[0], "POST", "/ui/signin", "", url.Values{"token": {tok.Token}})
		if resp.StatusCode == http.StatusSeeOther && len(resp.Cookies()) > 0 {
			cookie = resp.Cookies()[0]
		}
	}
	if cookie == nil || cookie.Name != "__Host-writ_session" || !cookie.Secure || !cookie.HttpOnly {
		t.Fatalf("sign-in on follower %s: cookie %+v", c.srv[f[0]].id, cookie)
	}
	var status int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status = do(f[1], "GET", "/ui/intents", cookie.Value, nil).StatusCode; status == http.StatusOK {
			break
		}
	}
	if status != http.StatusOK {
		t.Fatalf("the session on the other follower: %d", status)
	}
	// Sign out on the other follower, with the session's CSRF token.
	req, _ := http.NewRequest("GET", base(f[1])+"/ui/intents", nil)
	req.Header.Set("Cookie", "__Host-writ_session="+cookie.Value)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page := new(strings.Builder)
	buf := make([]byte, 32<<10)
	n, _ := resp.Body.Read(buf)
	page.Write(buf[:n])
	resp.Body.Close()
	_, after, _ := strings.Cut(page.String(), `data-csrf="`)
	csrf, _, _ := strings.Cut(after, `"`)
	if out := do(f[1], "POST", "/ui/signout", cookie.Value, url.Values{"csrf": {csrf}}); out.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out on a follower: %d", out.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if status = do(f[0], "GET", "/ui/intents", cookie.Value, nil).StatusCode; status == http.StatusSeeOther {
			return
		}
	}
	t.Fatalf("signed out, the session still shows pages on %s: %d", c.srv[f[0]].id, status)
}
