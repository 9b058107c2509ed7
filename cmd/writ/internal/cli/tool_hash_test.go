package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/protocol"
)

func TestToolHashOfManifestAndRegistration(t *testing.T) {
	dir := t.TempDir()
	manifest := `{ "tier": "wasm", "name": "echo", "module": "/opt/echo.wasm" }`
	canon, _ := protocol.Canonicalize([]byte(manifest))
	want := protocol.HashBytes(canon)
	m := filepath.Join(dir, "echo.json")
	os.WriteFile(m, []byte(manifest), 0o644)
	reg := filepath.Join(dir, "echo.tool.json")
	os.WriteFile(reg, []byte(`{"name":"echo","input_schema":{"type":"object"},"manifest":`+manifest+`}`), 0o644)
	out, err := runCmd(t, newToolHash, m, reg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, `"hash":"`+want+`"`) != 2 || !strings.Contains(out, `"name":"echo"`) {
		t.Fatalf("got %s, want %s twice", out, want)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name":"echo","tier":"wasm","module":"/m.wasm","limits":{"timeout":1}}`), 0o644)
	if _, err := runCmd(t, newToolHash, bad); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("got %v, want an error naming bad.json", err)
	}
}
