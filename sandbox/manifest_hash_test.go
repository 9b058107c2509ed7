package sandbox_test

import (
	"errors"
	"testing"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// The control plane hashes protocol.Canonicalize of the registered text;
// HashRegistered must give the same hash for every manifest it accepts.
func checkSameAsProtocol(t *testing.T, raw string) {
	got, err := sandbox.HashRegistered([]byte(raw))
	canon, perr := protocol.Canonicalize([]byte(raw))
	if perr != nil {
		return // the control plane would not register it
	}
	if err != nil {
		t.Fatalf("%q: HashRegistered: %v, but the protocol canonicalizes it", raw, err)
	}
	if want := protocol.HashBytes(canon); got != want {
		t.Fatalf("%q: got %s, the control plane says %s", raw, got, want)
	}
}

func TestHashRegistered(t *testing.T) {
	a := `{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{}}`
	b := "{ \"tier\" : \"wasm\", \"limits\":{}, \"module\":\"/opt/echo.wasm\",\n \"name\":\"echo\" }"
	ha, _ := sandbox.HashRegistered([]byte(a))
	hb, _ := sandbox.HashRegistered([]byte(b))
	if ha != hb {
		t.Errorf("spacing and member order changed the hash: %s %s", ha, hb)
	}
	c := `{"name":"echo","tier":"wasm","module":"/opt/echo.wasm","limits":{"timeout_ms":30000}}`
	if hc, _ := sandbox.HashRegistered([]byte(c)); hc == ha {
		t.Errorf("a spelled-out default hashes like its absence: registered text is what counts")
	}
	for _, raw := range []string{a, b, c, `{"n":1e2,"s":"\u00e9"}`} {
		checkSameAsProtocol(t, raw)
	}
	if _, err := sandbox.HashRegistered([]byte(`{"a":1,"a":2}`)); !errors.Is(err, sandbox.ErrInvalidManifest) {
		t.Errorf("duplicate member: got %v", err)
	}
}

func FuzzHashRegistered(f *testing.F) {
	f.Add(`{"name":"echo","tier":"wasm","module":"/opt/echo.wasm"}`)
	f.Add(`{"x":[1.5,-0,1e400,"\ud800"]}`)
	f.Fuzz(func(t *testing.T, raw string) { checkSameAsProtocol(t, raw) })
}
