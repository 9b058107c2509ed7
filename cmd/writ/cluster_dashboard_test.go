package main_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestClusterDashboardSessions signs in to the dashboard on a follower of a
// 3-server cluster over TLS, uses the session on the other follower, signs
// out there, and finds the session ended on the first: tokens and sessions
// are replicated, and a follower's dashboard writes reach the leader. An
// admin's lock made on a follower's dashboard is on the record, the same
// leaf on every server.
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
	// An admin's lock made on a follower's dashboard is relayed to the
	// leader and on the record, the same leaf on every server.
	lockOnFollower(t, c, f[1], base(f[1]), hc)

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

// lockOnFollower signs the admin in on server i (a follower), makes a lock
// from its Audit page, and checks that the leader lists its admin entry,
// by the admin's session, and that every server holds the same leaf.
func lockOnFollower(t *testing.T, c *testCluster, i int, base string, hc *http.Client) {
	t.Helper()
	post := func(path, cookie string, form url.Values) *http.Response {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
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
	signIn := post("/ui/signin", "", url.Values{"token": {c.token}})
	if signIn.StatusCode != http.StatusSeeOther || len(signIn.Cookies()) == 0 {
		t.Fatalf("the admin's sign-in on %s: %d", c.srv[i].id, signIn.StatusCode)
	}
	cookie := signIn.Cookies()[0].Value
	m := hmac.New(sha256.New, []byte(cookie))
	m.Write([]byte("writ dashboard csrf"))
	csrf := base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if resp := post("/ui/locks", cookie, url.Values{"csrf": {csrf}, "tool": {"echo"}, "ttl": {"10m"}, "reason": {"made on a follower"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a lock on follower %s: %d", c.srv[i].id, resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	entries, err := c.client(c.waitLeader(30*time.Second)).AdminEntries(ctx, 0, 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the leader's admin entries: %v %v", entries, err)
	}
	e := entries[0]
	if e.Action != "lock.create" || e.Actor != "user:admin-token" || e.After == "" {
		t.Fatalf("the newest admin entry: %+v, want the follower's lock by user:admin-token", e)
	}
	var leaves []string
	for j := range c.srv {
		var leaf string
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			raw, err := c.client(j).Receipt(ctx, e.Index)
			var rp struct {
				Receipt json.RawMessage `json:"receipt"`
			}
			if err == nil && json.Unmarshal(raw, &rp) == nil && len(rp.Receipt) > 0 {
				leaf = string(rp.Receipt)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not prove admin entry %d: %v", c.srv[j].id, e.Index, err)
			}
		}
		leaves = append(leaves, leaf)
	}
	for j := 1; j < len(leaves); j++ {
		if leaves[j] != leaves[0] {
			t.Errorf("admin entry %d differs between %s and %s:\n%s\n%s", e.Index, c.srv[0].id, c.srv[j].id, leaves[0], leaves[j])
		}
	}
}
