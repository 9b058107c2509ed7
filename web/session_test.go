package web

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func signIn(t *testing.T, base, token, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/ui/signin", strings.NewReader(url.Values{"token": {token}, "next": {"/ui/approvals"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestSignInCookie(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		_, _, srv := testServer(t, func(c *Config) { c.Secure = secure })
		resp := signIn(t, srv.URL, "tok-viewer", srv.URL)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/approvals" {
			t.Fatalf("sign-in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		c := resp.Cookies()[0]
		name := map[bool]string{false: "writ_session", true: "__Host-writ_session"}[secure]
		if c.Name != name || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != secure || c.Path != "/" || c.Expires.IsZero() {
			t.Errorf("secure=%v: cookie %+v; want %s, HttpOnly, SameSite=Strict, Secure under TLS, path /, with expiry", secure, c, name)
		}
	}
	_, _, srv := testServer(t, nil)
	if resp := signIn(t, srv.URL, "tok-viewer", "http://evil.example"); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("sign-in from another origin: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp := signIn(t, srv.URL, "wrong", srv.URL); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("sign-in with a wrong token: %d", resp.StatusCode)
	}
}

func TestPagesNeedASession(t *testing.T) {
	t.Parallel()
	_, _, srv := testServer(t, nil)
	for _, p := range []string{"/ui/", "/ui/fleet", "/ui/approvals", "/ui/intents", "/ui/intents/x", "/ui/ledger"} {
		resp, err := noRedirect.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/signin?next=") {
			t.Errorf("%s without a session: %d %q", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

func request(t *testing.T, method, u, cookie, csrf, origin, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header.Set("Cookie", "writ_session="+cookie)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const approvalBody = `{"type":"writ.approval/v1","id":"apr-1","intent_id":"%s","payload_hash":"sha256:9d9f1d35f5366bc9623cfc78c6bd8f392224d80f0e7a1495223adcace4ccd89b","tenant":"%s","approver":"%s","decision":"approve","nonce":"6818L1ppolDzHaL5bZKJBg==","issued_at":"2026-11-22T10:02:00Z","expires_at":"2026-11-22T10:12:00Z","key_id":"k1","sig":"nTvK8oe8uKd6kLqE0TP22chhyptpax4Hw2VbT4egEAKWtpewE7Jqct433ltQFOSl/HeFS/bt2LjnuralI2n5Cg=="}`

func TestApprovalGuard(t *testing.T) {
	t.Parallel()
	_, fb, srv := testServer(t, nil)
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "i1", Tenant: "acme", Principal: "bot", State: "pending_approval"}})
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "own", Tenant: "acme", Principal: "alice", State: "pending_approval"}})
	fb.SignIn(t.Context(), "tok-approver", time.Hour)
	fb.SignIn(t.Context(), "tok-viewer", time.Hour)
	alice, viewer := "secret-tok-approver", "secret-tok-viewer"
	body := func(intent, tenant, approver string) string {
		return fmt.Sprintf(approvalBody, intent, tenant, approver)
	}
	for _, c := range []struct {
		name, cookie, csrf, origin, body string
		status                           int
		code                             string
	}{
		{"approver with the token", alice, csrfToken(alice), srv.URL, body("i1", "acme", "alice"), 200, ""},
		{"no CSRF token", alice, "", srv.URL, body("i1", "acme", "alice"), 403, "csrf"},
		{"another session's token", alice, csrfToken(viewer), srv.URL, body("i1", "acme", "alice"), 403, "csrf"},
		{"another origin", alice, csrfToken(alice), "http://evil.example", body("i1", "acme", "alice"), 403, "csrf"},
		{"as someone else", alice, csrfToken(alice), srv.URL, body("i1", "acme", "bob"), 403, "approval_forbidden"},
		{"own intent", alice, csrfToken(alice), srv.URL, body("own", "acme", "alice"), 403, "approval_forbidden"},
		{"viewer", viewer, csrfToken(viewer), srv.URL, body("i1", "acme", "alice"), 403, "approval_forbidden"},
		{"ended session", "gone", csrfToken("gone"), srv.URL, body("i1", "acme", "alice"), 401, "unauthorized"},
		{"not an approval", alice, csrfToken(alice), srv.URL, `{"type":"writ.approval/v1"}`, 400, "malformed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, got := request(t, "POST", srv.URL+"/v1/approvals", c.cookie, c.csrf, c.origin, c.body)
			if status != c.status || (c.code != "" && !strings.Contains(got, `"`+c.code+`"`)) {
				t.Fatalf("got %d %s, want %d %s", status, got, c.status, c.code)
			}
		})
	}
	// Without the cookie it is the API's: the approval's signature decides.
	resp, err := http.Post(srv.URL+"/v1/approvals", "application/json", strings.NewReader(body("i1", "acme", "bob")))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("API approval without a cookie: %v %v", resp, err)
	}
}

func TestSignOutNeedsCSRF(t *testing.T) {
	t.Parallel()
	_, fb, srv := testServer(t, nil)
	fb.SignIn(t.Context(), "tok-viewer", time.Hour)
	s := "secret-tok-viewer"
	if status, _ := request(t, "POST", srv.URL+"/ui/signout", s, "", srv.URL, ""); status != 403 {
		t.Fatalf("sign-out without the CSRF token: %d", status)
	}
	if _, ok := fb.Session(s); !ok {
		t.Fatal("a sign-out without the CSRF token ended the session")
	}
	if status, _ := request(t, "POST", srv.URL+"/ui/signout", s, csrfToken(s), srv.URL, ""); status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", status)
	}
	if _, ok := fb.Session(s); ok {
		t.Fatal("signed out, yet the session is open")
	}
}

func TestViewerIsNotOfferedApproval(t *testing.T) {
	t.Parallel()
	_, fb, srv := testServer(t, nil)
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "i1", Tenant: "acme", Principal: "bot", State: "pending_approval"}, Params: `{"a":1}`})
	fb.put(IntentDetail{IntentSummary: IntentSummary{ID: "own", Tenant: "acme", Principal: "alice", State: "pending_approval"}, Params: `{}`})
	for token, want := range map[string][]string{
		"tok-viewer":   {`id="why-i1"`, `id="why-own"`},
		"tok-approver": {`id="approve-i1"`, `id="why-own"`, "your own intent"},
	} {
		fb.SignIn(t.Context(), token, time.Hour)
		status, page := request(t, "GET", srv.URL+"/ui/approvals", "secret-"+token, "", "", "")
		if status != 200 {
			t.Fatalf("%s: %d", token, status)
		}
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the page lacks %q", token, w)
			}
		}
		if token == "tok-viewer" && strings.Contains(page, "data-decision") {
			t.Errorf("a viewer is offered a decision")
		}
		if strings.Contains(page, `id="approve-own"`) {
			t.Errorf("%s is offered to approve alice's own intent", token)
		}
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/ui/intents?state=x": "/ui/intents?state=x", "": "/ui/", "https://evil.example/ui/": "/ui/",
		"//evil.example/ui/": "/ui/", "/ui/\\evil": "/ui/", "/v1/admin": "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/ui/", "//x", "/ui/../../", "/ui/\r\nLocation: x", "https://a/ui/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := safeNext(s)
		if !strings.HasPrefix(got, "/ui/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\\r\n") {
			t.Fatalf("safeNext(%q) = %q leaves the dashboard", s, got)
		}
	})
}

func FuzzFormTime(f *testing.F) {
	for _, s := range []string{"", "2026-11-22T10:00", "2026-11-22T10:00:05", "2026-11-22T10:00:00Z", "x", "2026-13-40T99:99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := formTime(s)
		if err == nil && s != "" && tm.Location() != time.UTC {
			t.Fatalf("formTime(%q) is not UTC", s)
		}
		if err != nil && !tm.IsZero() {
			t.Fatalf("formTime(%q) failed with a time", s)
		}
	})
}

// TestSignInTableFull: a full session table is told apart from a wrong
// token, with a page that says what an admin can do.
func TestSignInTableFull(t *testing.T) {
	t.Parallel()
	_, _, srv := testServer(t, nil)
	req, _ := http.NewRequest("POST", srv.URL+"/ui/signin", strings.NewReader(url.Values{"token": {"tok-full"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || len(resp.Cookies()) != 0 || !strings.Contains(string(body), "writ session list") {
		t.Fatalf("sign-in into a full table: %d, cookies %v, page mentions the admin commands: %v", resp.StatusCode, resp.Cookies(), strings.Contains(string(body), "writ session list"))
	}
}
