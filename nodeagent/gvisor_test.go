package nodeagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestDispatchRunsInGvisor: a dispatch for a gvisor-tier tool runs in
// gVisor, and its signed result names the gvisor tier and the digest of
// the executable that ran.
func TestDispatchRunsInGvisor(t *testing.T) {
	testtier.Slow(t, "a runsc sandbox")
	cfg := gvisor.DefaultConfig()
	cfg.OCI.RootFS, cfg.OCI.StateDir = sandboxtest.BusyboxRootfs(t), t.TempDir()
	g, err := gvisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, sandbox.TierGvisor, g.Available())
	h := newHarness(t, 1)
	tool := sandboxtest.HostTool(t)
	tools := filepath.Join(h.dir, "tools")
	writeFiles(t, tools, map[string]string{"sealed.json": `{"name":"sealed","tier":"gvisor","command":{"path":"` + tool + `"}}`})
	if h.allow, err = LoadAllowlist(tools); err != nil {
		t.Fatal(err)
	}
	h.tiers = Probe(map[string]sandbox.Driver{"wasm": sharedWasm(t), "gvisor": g})
	h.x = h.newExecutor(1)
	if err := h.x.Handle(context.Background(), sign(t, h.dispatch("sealed", `{"op":"echo"}`), serverKey), servers); err != nil {
		t.Fatal(err)
	}
	r := h.outbox()["dsp-1"]
	if r == nil || r.Status != protocol.StatusOK || r.Sandbox != "gvisor" || r.Output != `{"op":"echo"}` || r.Attest == nil {
		t.Fatalf("result %+v: want ok from the gvisor tier, with attest", r)
	}
	b, err := os.ReadFile(tool)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := "sha256:" + hex.EncodeToString(sum[:]); r.Attest.ExecDigest != want || r.Attest.WallMS <= 0 {
		t.Errorf("attest %+v, want digest %s and a wall time", r.Attest, want)
	}
}
