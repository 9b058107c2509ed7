package sandboxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/writhq/writ/sandbox"
)

// testExecDigest: a run reports the SHA-256 of the file it ran (the
// command's executable, or the wasm module) and what it used: wall time,
// CPU time and memory; a refused run reports no digest.
func testExecDigest(t *testing.T, h Harness) {
	m := h.Manifest()
	path := m.Module
	if m.Command != nil {
		path = m.Command.Path
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	o := run(t, h, m, `{"op":"echo"}`, "")
	want(t, o, sandbox.StatusOK)
	if w := "sha256:" + hex.EncodeToString(sum[:]); o.ExecDigest != w {
		t.Errorf("exec digest: got %q, want %q", o.ExecDigest, w)
	}
	if o.Usage.Wall <= 0 {
		t.Errorf("usage: no wall time: %+v", o.Usage)
	}
	o = run(t, h, m, `{"op":"echo","op":"exit"}`, "")
	if o.Status != sandbox.StatusRefused || o.ExecDigest != "" {
		t.Errorf("refused run: status %s, digest %q", o.Status, o.ExecDigest)
	}
}
