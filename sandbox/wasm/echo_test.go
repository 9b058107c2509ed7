package wasm_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

const echoPackage = "github.com/writhq/writ/sandbox/tools/echo"

func TestEchoTool(t *testing.T) {
	cache := t.TempDir()
	d := newDriver(t, cache)
	mod := sandboxtest.BuildTool(t, echoPackage, "wasip1", "wasm")
	m, err := sandbox.ParseManifest([]byte(`{"name":"echo","tier":"wasm","module":"` + mod + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	params := `{"message":"hello, writ"}`
	out, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != sandbox.StatusOK || string(out.Output) != params || out.Tier != "wasm" {
		t.Fatalf("got status %s output %q tier %s, want ok %q wasm", out.Status, out.Output, out.Tier, params)
	}
	// The compiled code is on disk, for the next agent start.
	var files int
	filepath.WalkDir(cache, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Errorf("nothing in the compilation cache %s after a run", cache)
	}
}
