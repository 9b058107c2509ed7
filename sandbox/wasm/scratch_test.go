package wasm_test

import (
	"context"
	"os"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/sandboxtest"
	"github.com/writhq/writ/sandbox/wasm"
)

// TestScratchWorkspace: a run of a scratch workspace (the agent's, removed
// unread after the run) works on a tmpfs mounted empty, is bounded by
// limits.disk_bytes as any run is, and leaves the directory as it found it:
// what the tool wrote is discarded, and what the directory held was never
// shown to the tool.
func TestScratchWorkspace(t *testing.T) {
	testtier.Root(t, "a tmpfs")
	d := newDriver(t, wasm.SharedCache(t)) // the test tool compiled once for the package's tests
	m := sandbox.Manifest{Name: "testtool", Tier: sandbox.TierWasm, Module: sandboxtest.WasmTool(t)}
	run := func(ws, params string, limit int64) sandbox.Outcome {
		t.Helper()
		m := m
		m.Limits.DiskBytes, m.Limits.TimeoutMS = limit, 60_000
		o, err := d.Run(context.Background(), sandbox.Invocation{Manifest: m, Params: jsontext.Value(params), Workspace: ws, Scratch: true})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	ws := t.TempDir()
	if o := run(ws, `{"op":"write","path":"note.txt","data":"discarded"}`, 1<<20); o.Status != sandbox.StatusOK || !o.WorkspaceUntouched {
		t.Fatalf("write: %s (%s), workspace untouched %v; want ok, untouched", o.Status, o.Reason, o.WorkspaceUntouched)
	}
	kept := m
	kept.Limits.DiskBytes, kept.Limits.TimeoutMS = 1<<20, 60_000
	if o, err := d.Run(context.Background(), sandbox.Invocation{Manifest: kept, Params: jsontext.Value(`{"op":"write","path":"kept.txt","data":"x"}`), Workspace: t.TempDir()}); err != nil || o.Status != sandbox.StatusOK || o.WorkspaceUntouched {
		t.Fatalf("a run of a workspace that is not scratch: %s (%v), untouched %v; want ok, not untouched (its writes are copied back)", o.Status, err, o.WorkspaceUntouched)
	}
	if names, err := os.ReadDir(ws); err != nil || len(names) != 0 {
		t.Fatalf("the scratch workspace after the run holds %v (%v); want nothing", names, err)
	}

	if err := os.WriteFile(ws+"/note.txt", []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := run(ws, `{"op":"read","path":"note.txt"}`, 1<<20); o.Status != sandbox.StatusError {
		t.Fatalf("read of a file the directory holds: %s %q; want an error (the tmpfs is mounted empty)", o.Status, o.Output)
	}
	if b, err := os.ReadFile(ws + "/note.txt"); err != nil || string(b) != "host" {
		t.Fatalf("the directory's own file after the run: %q, %v", b, err)
	}

	const limit = 8 << 20
	if o := run(t.TempDir(), `{"op":"fill","path":"big","bytes":67108864}`, limit); o.Status != sandbox.StatusDiskLimit {
		t.Fatalf("64 MiB into a scratch workspace of 8 MiB: %s (%s), want disk_limit", o.Status, o.Reason)
	}
}
