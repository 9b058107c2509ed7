package controlplane

import (
	"strings"
	"testing"
)

func FuzzParseUserToken(f *testing.F) {
	for _, s := range []string{"wu1.0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "wu1..x", "wj1.a.b.c", "wu1.a.b.c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, secret, ok := parseUserToken(s)
		if !ok {
			return
		}
		if !validID(id) || len(secret) != 32 || !strings.HasPrefix(strings.TrimSpace(s), "wu1."+id+".") {
			t.Fatalf("parseUserToken(%q) = %q, %d bytes", s, id, len(secret))
		}
	})
}
