package pki

import (
	"crypto/x509"
	"net/url"
	"testing"
)

// FuzzIdentity: whatever URI a certificate carries, Identity either refuses
// it or names a role and an id that IdentityURI turns back into a URI
// Identity reads the same way.
func FuzzIdentity(f *testing.F) {
	for _, s := range []string{"writ://server/s1", "writ://node/n1", "writ:///x", "writ://server/a/b", "spiffe://x/y", "writ://server/%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		role, id, err := Identity(&x509.Certificate{URIs: []*url.URL{u}})
		if err != nil {
			return
		}
		if role == "" || id == "" {
			t.Fatalf("Identity(%q) = %q, %q with no error", s, role, id)
		}
		r2, id2, err := Identity(&x509.Certificate{URIs: []*url.URL{IdentityURI(role, id)}})
		if err != nil || r2 != role || id2 != id {
			t.Fatalf("round trip of %q: %q, %q, %v; want %q, %q", s, r2, id2, err, role, id)
		}
	})
}
