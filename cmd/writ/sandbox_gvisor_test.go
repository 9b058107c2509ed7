package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/writhq/writ/sandbox/gvisor"
	"github.com/writhq/writ/sandbox/sandboxtest"
)

// TestSandboxRunGvisor runs the sandbox test tool in the gvisor tier
// through `writ sandbox run --tier gvisor --rootfs`, with the tier's
// default configuration (runsc from PATH, the platform probed): the tool
// runs, its outcome names the tier and the digest of what ran.
func TestSandboxRunGvisor(t *testing.T) {
	tool := sandboxtest.HostTool(t)
	rootfs := sandboxtest.BusyboxRootfs(t)
	cfg := gvisor.DefaultConfig()
	cfg.OCI.RootFS, cfg.OCI.StateDir = rootfs, t.TempDir()
	d, err := gvisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.RequireAvailable(t, "gvisor", d.Available())
	manifest := writeFile(t, t.TempDir(), "tool.json", `{"name":"testtool","tier":"gvisor","command":{"path":"`+tool+`"}}`)
	out, code := run(t, `{"op":"echo"}`, "sandbox", "run", "--tier", "gvisor", "--manifest", manifest, "--rootfs", rootfs)
	if code != 0 {
		t.Fatalf("sandbox run --tier gvisor: %q exit %d", out, code)
	}
	var got struct {
		Status, Output, Tier string
		ExecDigest           string `json:"exec_digest"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(tool)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got.Status != "ok" || got.Tier != "gvisor" || got.Output != `{"op":"echo"}` || got.ExecDigest != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("got %+v", got)
	}
}
