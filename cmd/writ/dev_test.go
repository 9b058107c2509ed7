package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/freeport"
)

// freePort returns a loopback address whose port is free for both TCP and
// UDP (the API and node sessions share a port number; gossip uses both), and
// never the same one twice in this test process.
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Loopback()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// startWritDev runs `writ dev` and waits for it to say it serves.
func startWritDev(t *testing.T, dir, addr, raftAddr string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(writBin, "dev", "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Writ dev server on") {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("writ dev did not start within 30s")
	}
	return cmd
}

func stopWritDev(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("writ dev exited with %v after SIGINT", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("writ dev did not stop after SIGINT")
	}
}

// TestDevEndToEnd runs the real binary: writ dev, then intents signed and
// submitted with the CLI, an approval, a replayed approval, and a restart
// that keeps everything.
func TestDevEndToEnd(t *testing.T) {
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	var creds struct {
		Tenant       string `json:"tenant"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
		Approver struct {
			KeyID    string `json:"key_id"`
			Approver string `json:"approver"`
		} `json:"approver"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || json.Unmarshal(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "dev.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("dev.json mode %v, want 0600", fi.Mode().Perm())
	}
	sign := func(tool string) string {
		out, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
			"--tenant", creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", tool, "--params", `{"msg":"hi"}`)
		if code != 0 {
			t.Fatalf("intent sign: exit %d", code)
		}
		return out
	}
	state := func(out string) string {
		var r struct {
			IntentID, State string
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("answer %q: %v", out, err)
		}
		return r.State
	}
	// The agent inside writ dev runs echo in the wasm tier.
	out, code := run(t, sign("echo"), "intent", "submit", "--server", server, "--wait", "10s")
	if code != 0 || state(out) != "completed" || !strings.Contains(out, `"sandbox":"wasm"`) || !strings.Contains(out, `"type":"writ.result/v2"`) {
		t.Fatalf("submit echo: %q exit %d", out, code)
	}
	// The answer to a submission, and the receipt, carry the output's
	// hashes; the output itself only a signed read of the tenant.
	var echo struct {
		ID           string  `json:"intent_id"`
		ReceiptIndex *uint64 `json:"receipt_index"`
	}
	if json.Unmarshal([]byte(out), &echo) != nil || echo.ReceiptIndex == nil || strings.Contains(out, `{\"msg\":\"hi\"}`) {
		t.Fatalf("submit echo: the answer has the output or no receipt: %q", out)
	}
	signedGet := func(id string) (string, int) {
		return run(t, "", "intent", "get", id, "--server", server, "--tenant", creds.Tenant,
			"--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"))
	}
	if out, code := signedGet(echo.ID); code != 0 || !strings.Contains(out, `"output":"{\"msg\":\"hi\"}"`) {
		t.Fatalf("intent get echo: %q exit %d", out, code)
	}
	if out, code := run(t, "", "--output", "text", "intent", "get", echo.ID, "--server", server, "--tenant", creds.Tenant,
		"--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key")); code != 0 || out != echo.ID+": completed\n{\"msg\":\"hi\"}\n" {
		t.Fatalf("intent get echo, text: %q exit %d", out, code)
	}
	var ledgerKey struct {
		LedgerKey string `json:"ledger_key"`
	}
	json.Unmarshal(b, &ledgerKey)
	echoReceipt, code := run(t, "", "receipt", "get", fmt.Sprint(*echo.ReceiptIndex), "--server", server)
	if code != 0 || strings.Contains(echoReceipt, `{\"msg\":\"hi\"}`) {
		t.Fatalf("echo's receipt: %q exit %d", echoReceipt, code)
	}
	echoReceiptFile := writeFile(t, t.TempDir(), "echo-receipt.json", echoReceipt)
	for _, c := range []struct {
		output, want string
		code         int
	}{
		{`{"msg":"hi"}`, `"output":"captured"`, 0},
		{`{"msg":"ho"}`, `"error":"output_mismatch"`, 1},
		{``, `"error":"output_mismatch"`, 1},
	} {
		out, code := run(t, "", "verify", "receipt", echoReceiptFile, "--key", ledgerKey.LedgerKey,
			"--output", writeFile(t, t.TempDir(), "output", c.output))
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("verify receipt --output %q: %q exit %d, want %s exit %d", c.output, out, code, c.want, c.code)
		}
	}
	// --output names the file there, so -o still sets the format.
	if out, code := run(t, "", "verify", "receipt", echoReceiptFile, "--key", ledgerKey.LedgerKey, "-o", "text",
		"--output", writeFile(t, t.TempDir(), "output", `{"msg":"hi"}`)); code != 0 || !strings.HasPrefix(out, "valid against ") ||
		!strings.Contains(out, "the captured output the result commits to (12 bytes)") {
		t.Errorf("verify receipt --output -o text: %q exit %d", out, code)
	}
	pending := sign("echo_approval")
	out, code = run(t, pending, "intent", "submit", "--server", server)
	if code != 0 || state(out) != "pending_approval" {
		t.Fatalf("submit echo_approval: %q exit %d", out, code)
	}
	pendingFile := writeFile(t, t.TempDir(), "pending.json", pending)
	approval, code := run(t, "", "approval", "sign", "--intent", pendingFile, "--key",
		creds.Approver.KeyID+"="+filepath.Join(dir, "approver.key"), "--approver", creds.Approver.Approver)
	if code != 0 {
		t.Fatalf("approval sign: exit %d", code)
	}
	out, code = run(t, approval, "approval", "submit", "--server", server)
	if code != 0 || (state(out) != "dispatched" && state(out) != "completed") {
		t.Fatalf("approval submit: %q exit %d", out, code)
	}
	out, code = run(t, approval, "approval", "submit", "--server", server)
	if code != 1 || !strings.Contains(out, `"approval_replayed"`) {
		t.Fatalf("approval replayed: %q exit %d", out, code)
	}
	// A denial ends an intent with a receipt that verifies offline.
	denied := sign("echo_approval")
	deniedFile := writeFile(t, t.TempDir(), "denied.json", denied)
	deny, code := run(t, "", "approval", "sign", "--intent", deniedFile, "--key",
		creds.Approver.KeyID+"="+filepath.Join(dir, "approver.key"), "--approver", creds.Approver.Approver, "--decision", "deny")
	if code != 0 {
		t.Fatal("approval sign --decision deny")
	}
	out, code = run(t, denied, "intent", "submit", "--server", server, "--wait", "5s", "--approval", writeFile(t, t.TempDir(), "deny.json", deny))
	var final struct {
		State        string  `json:"state"`
		ReceiptIndex *uint64 `json:"receipt_index"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &final) != nil || final.State != "denied" || final.ReceiptIndex == nil {
		t.Fatalf("denied intent: %q exit %d", out, code)
	}
	receipt, code := run(t, "", "receipt", "get", fmt.Sprint(*final.ReceiptIndex), "--server", server)
	if code != 0 {
		t.Fatalf("receipt get: %q exit %d", receipt, code)
	}
	out, code = run(t, "", "verify", "receipt", writeFile(t, t.TempDir(), "receipt.json", receipt), "--key", ledgerKey.LedgerKey)
	if code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Fatalf("verify receipt: %q exit %d", out, code)
	}
	// A receipt without a result has no output to match.
	out, code = run(t, "", "verify", "receipt", writeFile(t, t.TempDir(), "receipt.json", receipt), "--key", ledgerKey.LedgerKey,
		"--output", writeFile(t, t.TempDir(), "output", "x"))
	if code != 1 || !strings.Contains(out, `"error":"output_mismatch"`) || !strings.Contains(out, "no result") {
		t.Fatalf("verify receipt --output of a denial: %q exit %d", out, code)
	}
	out, code = run(t, "", "verify", "receipt", writeFile(t, t.TempDir(), "receipt.json", receipt), "--key", ledgerKey.LedgerKey)
	if code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Fatalf("verify receipt: %q exit %d", out, code)
	}
	// The whole ledger exports as a bundle that verifies with no server.
	bundle := filepath.Join(t.TempDir(), "bundle.json")
	if out, code := run(t, "", "ledger", "export", "--server", server, "--out", bundle); code != 0 {
		t.Fatalf("ledger export: %q exit %d", out, code)
	}
	if out, code := run(t, "", "verify", "bundle", bundle, "--key", ledgerKey.LedgerKey); code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Fatalf("verify bundle: %q exit %d", out, code)
	}
	stopWritDev(t, dev)

	// Restarted on the same directory, it knows what it knew.
	dev = startWritDev(t, dir, addr, raftAddr)
	defer stopWritDev(t, dev)
	var p struct{ ID string }
	json.Unmarshal([]byte(pending), &p)
	out, code = run(t, "", "intent", "get", p.ID, "--server", server, "--tenant", creds.Tenant,
		"--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"))
	if code != 0 || state(out) != "completed" {
		t.Fatalf("after restart: %q exit %d", out, code)
	}
	if out, code := signedGet(echo.ID); code != 0 || !strings.Contains(out, `"output":"{\"msg\":\"hi\"}"`) {
		t.Fatalf("echo's output after restart: %q exit %d", out, code)
	}
	out, code = run(t, approval, "approval", "submit", "--server", server)
	if code != 1 || !strings.Contains(out, `"approval_replayed"`) {
		t.Fatalf("approval replayed after restart: %q exit %d", out, code)
	}
	// The receipt log survived the restart and still proves the receipt.
	receipt, code = run(t, "", "receipt", "get", fmt.Sprint(*final.ReceiptIndex), "--server", server)
	out, _ = run(t, "", "verify", "receipt", writeFile(t, t.TempDir(), "receipt2.json", receipt), "--key", ledgerKey.LedgerKey)
	if code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Fatalf("receipt after restart: %q / %q", receipt, out)
	}
}
