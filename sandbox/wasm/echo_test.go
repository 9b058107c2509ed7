package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

const echoPackage = "github.com/writhq/writ/sandbox/tools/echo"

func TestEchoTool(t *testing.T) {
	d := newDriver(t, t.TempDir())
	mod := sandboxtest.BuildTool(t, echoPackage, "wasip1", "wasm")
	m, err := sandbox.ParseManifest([]byte(`{"name":"echo","tier":"wasm","module":"` + mod + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	params := `{"message":"hello, writ"}`
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: json.RawMessage(params), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != sandbox.StatusOK || string(out.Output) != params || out.Tier != "wasm" {
		t.Fatalf("got status %s output %q tier %s, want ok %q wasm", out.Status, out.Output, out.Tier, params)
	}
}
