package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cookieName is the session cookie's name; under TLS it carries the __Host-
// prefix, which browsers accept only Secure, host-only and for path /.
func (d *Dashboard) cookieName() string {
	if d.cfg.Secure {
		return "__Host-writ_session"
	}
	return "writ_session"
}

// setSession sets (or, with secret "", clears) the session cookie. It is
// HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
// it), Secure under TLS, and for path / since /v1/events and /v1/approvals
// take it too.
func (d *Dashboard) setSession(w http.ResponseWriter, secret string, expires time.Time) {
	c := &http.Cookie{Name: d.cookieName(), Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: d.cfg.Secure}
	if secret == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}

// session returns the request's session secret and principal, if its cookie
// names an open session.
func (d *Dashboard) session(r *http.Request) (string, Principal, bool) {
	c, err := r.Cookie(d.cookieName())
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return "", Principal{}, false
	}
	p, ok := d.cfg.Backend.Session(c.Value)
	if !ok || !p.ExpiresAt.After(time.Now()) {
		return "", Principal{}, false
	}
	return c.Value, p, true
}

// hasSessionCookie reports whether the request carries a session cookie at
// all, valid or not: such a request is the browser's, and is held to the
// dashboard's rules.
func (d *Dashboard) hasSessionCookie(r *http.Request) bool {
	_, err := r.Cookie(d.cookieName())
	return err == nil
}

// csrfToken is the session's CSRF token: a MAC of a fixed label under the
// session secret, so it is known to the page (which prints it) and to the
// server (which derives it), never to another site.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("writ dashboard csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF accepts a state-changing request only from this origin and with
// the session's CSRF token, in the X-CSRF-Token header or the csrf form field.
func checkCSRF(r *http.Request, secret string) bool {
	if !sameOrigin(r) {
		return false
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	want := csrfToken(secret)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// sameOrigin checks the browser's own statements of where a request comes
// from: Sec-Fetch-Site when sent, and Origin, which must name this host.
// A request with neither is not from a current browser's page; it still
// needs the CSRF token, which no other origin can read.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// Principal returns who the request's session cookie signs in, if it carries
// a valid one: the control plane's API honours a session on the reads the
// dashboard's scripts make (a receipt in the ledger explorer).
func (d *Dashboard) Principal(r *http.Request) (Principal, bool) {
	_, p, ok := d.session(r)
	return p, ok
}
