package main_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/testtier"

	"github.com/writhq/writ/internal/jsonx"
)

// TestServerRefusesTamperedLedger runs the real binary: writ dev records
// receipts and stops; then its stored receipt log is damaged on disk in one
// way after another — a flipped byte in a leaf, in a stored hash, a
// truncation — and each time the server refuses to start with a message that
// says what is wrong. Undamaged again, it starts.
func TestServerRefusesTamperedLedger(t *testing.T) {
	t.Parallel()
	testtier.Slow(t, "starts writ dev once, then the server once for each kind of damage to its ledger")
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
	if err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	for _, msg := range []string{"a", "b", "c"} {
		intent, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
			"--tenant", creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", "echo", "--params", `{"msg":"`+msg+`"}`)
		if code != 0 {
			t.Fatal("intent sign")
		}
		if out, code := run(t, intent, "intent", "submit", "--server", "http://"+addr, "--wait", "60s"); code != 0 || !strings.Contains(out, `"completed"`) {
			t.Fatalf("submit: %q exit %d", out, code)
		}
	}
	// writ dev's own setup is on the record before the receipts.
	out, code := run(t, "", "ledger", "admin", "--server", "http://"+addr, "--token-file", filepath.Join(dir, "admin.token"))
	var admin struct{ Entries []jsontext.Value }
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &admin) != nil || len(admin.Entries) == 0 {
		t.Fatalf("ledger admin: %q exit %d", out, code)
	}
	size := int64(len(admin.Entries)) + 3
	waitCheckpoint(t, addr, size)
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
	// What a crash leaves after appends that were never synced is not
	// damage: data past the head (here garbage, as a torn write leaves it)
	// and a head behind the receipts Raft committed, with no checkpoint past
	// it (setting one syncs first). The server starts, and replaying its Raft
	// log appends the same receipts again.
	leaves, err := os.ReadFile(filepath.Join(ledgerDir, "leaves.dat"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"leaves.dat", "leaves.idx", "hashes.dat"} {
		f, err := os.OpenFile(filepath.Join(ledgerDir, name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(bytes.Repeat([]byte{0xa5}, 100))
		f.Close()
	}
	if err := os.WriteFile(filepath.Join(ledgerDir, "head"), []byte("writ-ledger-head v1\n0000000000000000001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ledgerDir, "checkpoint")); err != nil {
		t.Fatal(err)
	}
	dev = startWritDev(t, dir, addr, raftAddr)
	waitCheckpoint(t, addr, size) // published anew over the rebuilt receipts
	stopWritDev(t, dev)
	if got, _ := os.ReadFile(filepath.Join(ledgerDir, "leaves.dat")); !bytes.Equal(got, leaves) {
		t.Fatalf("rebuilt leaves.dat differs from the one before the crash:\n%q\n%q", got, leaves)
	}

	// Mended, the same directory starts and serves.
	dev = startWritDev(t, dir, addr, raftAddr)
	stopWritDev(t, dev)
}

// waitCheckpoint waits until the server at addr serves a checkpoint over size
// receipts.
func waitCheckpoint(t *testing.T, addr string, size int64) {
	t.Helper()
	var cp struct{ Size int64 }
	eventually.NoError(t, fmt.Sprintf("a checkpoint over %d receipts", size), func() error {
		resp, err := http.Get("http://" + addr + "/v1/ledger/checkpoint")
		if err != nil {
			return err
		}
		json.UnmarshalRead(resp.Body, &cp, jsonx.Lenient)
		resp.Body.Close()
		if cp.Size != size {
			return fmt.Errorf("the latest is over %d", cp.Size)
		}
		return nil
	})
}
