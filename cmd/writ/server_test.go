package main_test

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/jsonx"
)

type serverSetup struct {
	dir, ca, config, token, addr string
}

// setupServer makes everything a server needs with the CLI: a CA and the
// server's certificate, a keyring, a ledger key, an admin token, and a config.
func setupServer(t *testing.T, mutate func(map[string]any)) serverSetup {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	for _, args := range [][]string{
		{"ca", "create", "--dir", pki},
		{"ca", "issue", "--ca-dir", pki, "--id", "s1", "--host", "127.0.0.1", "--out-dir", pki},
		{"keygen", "hmac", "--id", "keyring", "--dir", dir},
		{"keygen", "ed25519", "--id", "ledger", "--dir", dir},
	} {
		if out, code := run(t, "", args...); code != 0 {
			t.Fatalf("writ %s: %q exit %d", strings.Join(args, " "), out, code)
		}
	}
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	addr := freePort(t)
	cfg := map[string]any{
		"id": "s1", "data_dir": filepath.Join(dir, "data"), "http_addr": addr, "raft_addr": freePort(t),
		"tls": map[string]string{"ca_file": filepath.Join(pki, "ca.pem"), "cert_file": filepath.Join(pki, "s1.pem"),
			"key_file": filepath.Join(pki, "s1.key"), "ca_key_file": filepath.Join(pki, "ca.key")},
		"agent_addr":         addr,
		"keyring_file":       filepath.Join(dir, "keyring.key"),
		"ledger":             map[string]string{"origin": "writ.test/server", "seed_file": filepath.Join(dir, "ledger.key")},
		"admin_token_hashes": []string{"sha256:" + hex.EncodeToString(sum[:])},
	}
	if mutate != nil {
		mutate(cfg)
	}
	raw, _ := jsonx.Marshal(cfg)
	return serverSetup{dir: dir, ca: filepath.Join(pki, "ca.pem"), config: writeFile(t, dir, "server.json", string(raw)), token: token, addr: addr}
}

func TestServerOverTLS(t *testing.T) {
	t.Parallel()
	s := setupServer(t, nil)
	cmd := exec.Command(writBin, "server", "--config", s.config)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ready <- sc.Text()
		}
	}()
	select {
	case line := <-ready:
		if !strings.Contains(line, "API https://"+s.addr) {
			t.Fatalf("first line: %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("writ server did not start")
	}
	server := "https://" + s.addr
	admin := func(args ...string) {
		t.Helper()
		if out, code := run(t, "", append(args, "--server", server, "--token", s.token, "--ca", s.ca)...); code != 0 {
			t.Fatalf("writ %s: %q exit %d", strings.Join(args, " "), out, code)
		}
	}
	if _, code := run(t, "", "keygen", "hmac", "--id", "orch", "--dir", s.dir); code != 0 {
		t.Fatal("keygen")
	}
	policy := writeFile(t, s.dir, "p.cedar", "@id(\"all\")\npermit (principal, action == Writ::Action::\"invoke\", resource) when { principal.tenant == \"acme\" };\n")
	tool := writeFile(t, s.dir, "t.json", `{"name":"echo","manifest":{"name":"echo","tier":"wasm","module":"/opt/echo.wasm"}}`)
	admin("tenant", "put", "acme")
	admin("key", "add", "--tenant", "acme", "--id", "orch", "--secret-file", filepath.Join(s.dir, "orch.key"))
	admin("tool", "apply", "-f", tool)
	admin("policy", "apply", "-f", policy)
	intent, _ := run(t, "", "intent", "sign", "--key", "orch="+filepath.Join(s.dir, "orch.key"), "--tenant", "acme",
		"--principal", "bot", "--run", "r", "--tool", "echo", "--params", `{}`)
	got, code := run(t, intent, "intent", "submit", "--server", server, "--ca", s.ca)
	// Recorded over TLS; no node is enrolled here (agent_test.go has them).
	// The four admin changes above are the ledger's entries 0-3.
	if code != 1 || !strings.Contains(got, `"no_eligible_node"`) || !strings.Contains(got, `"receipt_index":4`) {
		t.Fatalf("submit over TLS: %q exit %d", got, code)
	}
	// Without the cluster CA the server is not trusted; plain HTTP gets nothing.
	if _, code := run(t, intent, "intent", "submit", "--server", server); code != 2 {
		t.Errorf("submit without --ca: exit %d, want 2 (certificate not trusted)", code)
	}
	if resp, err := http.Get("http://" + s.addr + "/v1/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("the API answered plain HTTP")
		}
	}
}

func TestServerRefusesUnsafeConfig(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		mutate func(map[string]any)
		prep   func(serverSetup)
		want   string
	}{
		"no TLS":                        {mutate: func(m map[string]any) { delete(m, "tls") }, want: "tls.ca_file"},
		"certificate of another server": {mutate: func(m map[string]any) { m["id"] = "s2" }, want: "writ://server/s2"},
		"keyring readable by others":    {prep: func(s serverSetup) { os.Chmod(filepath.Join(s.dir, "keyring.key"), 0o644) }, want: "0600"},
		"unknown setting":               {mutate: func(m map[string]any) { m["bootstrap_expected"] = 3 }, want: "bootstrap_expected"},
		"no ledger key":                 {mutate: func(m map[string]any) { delete(m, "ledger") }, want: "ledger"},
		"no bootstrap and no join":      {mutate: func(m map[string]any) { m["bootstrap"] = false }, want: "bootstrap_expect (3 or 5) or join"},
		"bootstrap_expect 2":            {mutate: func(m map[string]any) { m["bootstrap_expect"] = 2; m["gossip_addr"] = "127.0.0.1:0" }, want: "bootstrap_expect 2"},
		"bootstrap_expect 4":            {mutate: func(m map[string]any) { m["bootstrap_expect"] = 4; m["gossip_addr"] = "127.0.0.1:0" }, want: "bootstrap_expect 4"},
		"bootstrap_expect 7":            {mutate: func(m map[string]any) { m["bootstrap_expect"] = 7; m["gossip_addr"] = "127.0.0.1:0" }, want: "1, 3 or 5"},
		"bootstrap and expect": {mutate: func(m map[string]any) {
			m["bootstrap"] = true
			m["bootstrap_expect"] = 3
			m["gossip_addr"] = "127.0.0.1:0"
		}, want: "contradict"},
		"join without gossip_addr": {mutate: func(m map[string]any) { m["join"] = []string{"127.0.0.1:1"} }, want: "gossip_addr"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setupServer(t, c.mutate)
			if c.prep != nil {
				c.prep(s)
			}
			cmd := exec.Command(writBin, "server", "--config", s.config)
			b, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(b), c.want) {
				t.Fatalf("got %v: %s; want a refusal naming %q", err, b, c.want)
			}
		})
	}
}
