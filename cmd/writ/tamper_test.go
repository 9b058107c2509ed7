package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerRefusesTamperedLedger runs the real binary: writ dev records
// receipts and stops; then its stored receipt log is damaged on disk in one
// way after another — a flipped byte in a leaf, in a stored hash, a
// truncation — and each time the server refuses to start with a message that
// says what is wrong. Undamaged again, it starts.
func TestServerRefusesTamperedLedger(t *testing.T) {
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	dev := startWritDev(t, dir, addr, raftAddr)
	var creds struct {
		Tenant       string `json:"tenant"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || json.Unmarshal(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	for _, msg := range []string{"a", "b", "c"} {
		intent, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
			"--tenant", creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", "echo", "--params", `{"msg":"`+msg+`"}`)
		if code != 0 {
			t.Fatal("intent sign")
		}
		if out, code := run(t, intent, "intent", "submit", "--server", "http://"+addr, "--wait", "10s"); code != 0 || !strings.Contains(out, `"completed"`) {
			t.Fatalf("submit: %q exit %d", out, code)
		}
	}
	// Wait for a checkpoint over all three receipts, then stop.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, code := run(t, "", "ledger", "export", "--server", "http://"+addr, "--out", filepath.Join(t.TempDir(), "b.json"))
		if code == 0 && strings.Contains(out, `"size":3`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopWritDev(t, dev)

	ledgerDir := filepath.Join(dir, "ledger")
	for _, tc := range []struct {
		name, file string
		damage     func([]byte) []byte
		want       string
	}{
		{"a flipped byte in a leaf", "leaves.dat", func(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }, "receipt log: "},
		{"a flipped byte in a stored hash", "hashes.dat", func(b []byte) []byte { b[0] ^= 0x80; return b }, "receipt log: "},
		{"a truncated log", "leaves.dat", func(b []byte) []byte { return b[:len(b)-10] }, "receipt log: "},
		{"a truncated index", "leaves.idx", func(b []byte) []byte { return b[:len(b)-8] }, "receipt log: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(ledgerDir, tc.file)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, orig, 0o600)
			if err := os.WriteFile(path, tc.damage(bytes.Clone(orig)), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(writBin, "dev", "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("writ dev started on %s", tc.name)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("writ dev kept running on %s; stderr:\n%s", tc.name, stderr.String())
			}
			t.Logf("%s: %s", tc.name, strings.TrimSpace(stderr.String()))
			if msg := stderr.String(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "store is corrupt") {
				t.Errorf("the refusal does not say the receipt log is corrupt: %q", msg)
			}
		})
	}
	// Mended, the same directory starts and serves.
	dev = startWritDev(t, dir, addr, raftAddr)
	stopWritDev(t, dev)
}
