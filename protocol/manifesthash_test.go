package protocol

import (
	"errors"
	"testing"
)

func TestManifestHash(t *testing.T) {
	a := `{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{}}`
	b := "{ \"tier\" : \"wasm\", \"limits\":{}, \"module\":\"/opt/echo.wasm\",\n \"name\":\"echo\" }"
	c := `{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{"timeout_ms":30000}}`
	ha, err := ManifestHash([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	if len(ha) != 7+64 || ha[:7] != "sha256:" {
		t.Errorf("got %q, want sha256: and 64 hex digits", ha)
	}
	canon, _ := Canonicalize([]byte(a))
	if ha != HashBytes(canon) {
		t.Errorf("got %s, want HashBytes(Canonicalize(raw)) %s", ha, HashBytes(canon))
	}
	if hb, _ := ManifestHash([]byte(b)); hb != ha {
		t.Errorf("spacing and member order changed the hash: %s %s", ha, hb)
	}
	if hc, _ := ManifestHash([]byte(c)); hc == ha {
		t.Errorf("a spelled-out default hashes like its absence: the registered text is what counts")
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"n":1e400}`, `{`, "{\"s\":\"\xff\"}"} {
		var e *Error
		if _, err := ManifestHash([]byte(bad)); !errors.As(err, &e) || e.Code != CodeMalformed {
			t.Errorf("ManifestHash(%q): got %v, want a %s error", bad, err, CodeMalformed)
		}
	}
}
