package main_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/writhq/writ/internal/eventually"
	"github.com/writhq/writ/internal/freeport"
	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
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

// startWritDev runs `writ dev` and waits for its banner.
func startWritDev(t *testing.T, dir, addr, raftAddr string) *exec.Cmd {
	t.Helper()
	cmd, _ := startDevBanner(t, writBin, "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
	return cmd
}

// startDevBanner runs `bin dev args...` in an environment without WRIT_
// variables and returns it, with its banner's lines, once it has printed
// them (it is ready then); the caller stops it with stopWritDev.
func startDevBanner(t *testing.T, bin string, args ...string) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev"}, args...)...)
	cmd.Env = withoutWritEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	banner := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "A node agent runs") {
				banner <- lines
			}
		}
	}()
	select {
	case lines := <-banner:
		return cmd, lines
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("writ dev printed no banner within 60s")
		return nil, nil
	}
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
	t.Parallel()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	var creds struct {
		AdminToken   string `json:"admin_token"`
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
	if err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
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
		if err := jsonx.UnmarshalLenient([]byte(out), &r); err != nil {
			t.Fatalf("answer %q: %v", out, err)
		}
		return r.State
	}
	// The agent inside writ dev runs echo in the wasm tier.
	out, code := run(t, sign("echo"), "intent", "submit", "--server", server, "--wait", "60s")
	if code != 0 || state(out) != "completed" || !strings.Contains(out, `"sandbox":"wasm"`) || !strings.Contains(out, `"type":"writ.result/v2"`) {
		t.Fatalf("submit echo: %q exit %d", out, code)
	}
	// The answer to a submission, and the receipt, carry the output's
	// hashes; the output itself only a signed read of the tenant.
	var echo struct {
		ID           string  `json:"intent_id"`
		ReceiptIndex *uint64 `json:"receipt_index"`
	}
	if jsonx.UnmarshalLenient([]byte(out), &echo) != nil || echo.ReceiptIndex == nil || strings.Contains(out, `{\"msg\":\"hi\"}`) {
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
	jsonx.UnmarshalLenient(b, &ledgerKey)
	echoReceipt, code := run(t, "", "receipt", "get", fmt.Sprint(*echo.ReceiptIndex), "--server", server, "--tenant", creds.Tenant,
		"--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"))
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
	if code != 1 || jsonx.UnmarshalLenient([]byte(out), &final) != nil || final.State != "denied" || final.ReceiptIndex == nil {
		t.Fatalf("denied intent: %q exit %d, want exit 1", out, code)
	}
	// A rejected intent exits 1 too, and a wait that runs out exits 5.
	if out, code := run(t, sign("no_such_tool"), "intent", "submit", "--server", server, "--wait", "5s"); code != 1 || state(out) != "rejected" {
		t.Fatalf("unknown tool: %q exit %d, want rejected and exit 1", out, code)
	}
	if out, code := run(t, sign("echo_approval"), "intent", "submit", "--server", server, "--wait", "100ms"); code != 5 || state(out) != "pending_approval" {
		t.Fatalf("wait ran out: %q exit %d, want pending_approval and exit 5", out, code)
	}
	orchestrator := []string{"--tenant", creds.Tenant, "--key", creds.Orchestrator.KeyID + "=" + filepath.Join(dir, "orchestrator.key")}
	receipt, code := run(t, "", append([]string{"receipt", "get", fmt.Sprint(*final.ReceiptIndex), "--server", server}, orchestrator...)...)
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
	// The whole ledger exports, with an auditor's token, as a bundle that
	// verifies with no server; without a token the export is refused (the
	// server proves leaves to anyone by their hash only).
	bundle := filepath.Join(t.TempDir(), "bundle.json")
	if out, code := run(t, "", "ledger", "export", "--server", server, "--out", bundle); code == 0 {
		t.Fatalf("ledger export without a token: %q exit 0", out)
	}
	auditor, code := run(t, "", "--output", "text", "token", "create", "--role", "auditor", "--server", server, "--token", creds.AdminToken)
	if code != 0 {
		t.Fatalf("token create --role auditor: %q exit %d", auditor, code)
	}
	// No receipt carries a tool's output (writ.result/v2): an auditor
	// without the outputs grant exports them all.
	if out, code := run(t, "", "ledger", "export", "--server", server, "--out", bundle, "--token", strings.TrimSpace(auditor)); code != 0 {
		t.Fatalf("ledger export by an auditor without outputs: %q exit %d", out, code)
	}
	auditor, code = run(t, "", "--output", "text", "token", "create", "--role", "auditor", "--outputs", "--server", server, "--token", creds.AdminToken)
	if code != 0 {
		t.Fatalf("token create --role auditor --outputs: %q exit %d", auditor, code)
	}
	if out, code := run(t, "", "ledger", "export", "--server", server, "--out", bundle, "--token", strings.TrimSpace(auditor)); code != 0 {
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
	jsonx.UnmarshalLenient([]byte(pending), &p)
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
	receipt, code = run(t, "", append([]string{"receipt", "get", fmt.Sprint(*final.ReceiptIndex), "--server", server}, orchestrator...)...)
	out, _ = run(t, "", "verify", "receipt", writeFile(t, t.TempDir(), "receipt2.json", receipt), "--key", ledgerKey.LedgerKey)
	if code != 0 || !strings.HasPrefix(out, `{"valid":true`) {
		t.Fatalf("receipt after restart: %q / %q", receipt, out)
	}
}

// TestDevFromLoneBinary runs writ dev from a binary alone in its folder, as
// `go install` leaves it (no tools/echo.wasm beside it): the built-in echo
// module runs, and an echo intent completes.
func TestDevFromLoneBinary(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "writ")
	placeExecutable(t, writBin, bin)
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	cmd, _ := startDevBanner(t, bin, "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr)
	defer stopWritDev(t, cmd)
	if _, err := os.Stat(filepath.Join(dir, "tools", "echo.wasm")); err != nil {
		t.Fatalf("the built-in echo module was not written: %v", err)
	}
	var creds struct {
		Tenant       string `json:"tenant"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dev.json")); err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	intent, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
		"--tenant", creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", "echo", "--params", `{"msg":"alone"}`)
	if code != 0 {
		t.Fatalf("intent sign: exit %d", code)
	}
	answer, code := run(t, intent, "intent", "submit", "--server", "http://"+addr, "--wait", "30s")
	var r struct {
		IntentID string `json:"intent_id"`
		State    string `json:"state"`
	}
	if code != 0 || jsonx.UnmarshalLenient([]byte(answer), &r) != nil || r.State != "completed" {
		t.Fatalf("submit echo: %q exit %d, want completed", answer, code)
	}
	got, code := run(t, "", "-o", "text", "intent", "get", r.IntentID, "--server", "http://"+addr, "--tenant", creds.Tenant,
		"--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"))
	if code != 0 || !strings.Contains(got, `{"msg":"alone"}`) {
		t.Fatalf("intent get: %q exit %d, want the params back as the output", got, code)
	}
}

// TestDevReadyMeansReady starts writ dev afresh 100 times (4 under -short)
// and submits an intent at the first moment /v1/health answers 200: dev.json
// is there by then, and every submission is admitted and completes.
func TestDevReadyMeansReady(t *testing.T) {
	t.Parallel()
	starts, parallel := testtier.Rounds(100, 4), 4
	sem := make(chan struct{}, parallel)
	for i := range starts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			devReadyOnce(t)
		})
	}
}

func devReadyOnce(t *testing.T) {
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	cmd := exec.Command(writBin, "dev", "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}()
	hc := &http.Client{Timeout: time.Second}
	eventually.Within(t, 60*time.Second, "/v1/health to answer 200", func() bool {
		resp, err := hc.Get("http://" + addr + "/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && (resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "") {
			t.Fatalf("/v1/health: %d (Retry-After %q), want 200 or 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		return resp.StatusCode == http.StatusOK
	})
	var creds struct {
		Tenant       string `json:"tenant"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev.json"))
	if err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
		t.Fatalf("dev.json when /v1/health first answered 200: %v", err)
	}
	intent, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
		"--tenant", creds.Tenant, "--principal", "support-bot", "--run", "run-1", "--tool", "echo", "--params", `{"msg":"ready"}`)
	if code != 0 {
		t.Fatalf("intent sign: exit %d", code)
	}
	if out, code := run(t, intent, "intent", "submit", "--server", "http://"+addr, "--wait", "30s"); code != 0 || !strings.Contains(out, `"state":"completed"`) {
		t.Fatalf("submit at the first 200: %q exit %d, want completed", out, code)
	}
}

// TestDevKeepsPolicy: a policy applied with `writ policy apply` survives a
// restart of writ dev, and --reset-policy puts the dev policy back.
func TestDevKeepsPolicy(t *testing.T) {
	t.Parallel()
	testtier.Slow(t, "restarts writ dev twice")
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	server := "http://" + addr
	dev := startWritDev(t, dir, addr, raftAddr)
	var creds struct {
		Tenant       string `json:"tenant"`
		AdminToken   string `json:"admin_token"`
		Orchestrator struct {
			KeyID string `json:"key_id"`
		} `json:"orchestrator"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "dev.json")); err != nil || jsonx.UnmarshalLenient(b, &creds) != nil {
		t.Fatalf("dev.json: %v", err)
	}
	// Only the principal "ops-bot" may invoke anything.
	strict := writeFile(t, t.TempDir(), "strict.cedar", `@id("ops.only")
permit (principal, action == Writ::Action::"invoke", resource)
when { principal.tenant == "dev" && principal.name == "ops-bot" };
`)
	if out, code := run(t, "", "policy", "apply", "-f", strict, "--server", server, "--token", creds.AdminToken); code != 0 {
		t.Fatalf("policy apply: %q exit %d", out, code)
	}
	submit := func(principal string) string {
		intent, code := run(t, "", "intent", "sign", "--key", creds.Orchestrator.KeyID+"="+filepath.Join(dir, "orchestrator.key"),
			"--tenant", creds.Tenant, "--principal", principal, "--run", "run-"+principal, "--tool", "echo", "--params", `{"msg":"hi"}`)
		if code != 0 {
			t.Fatalf("intent sign: exit %d", code)
		}
		out, _ := run(t, intent, "intent", "submit", "--server", server, "--wait", "30s")
		var r struct{ State string }
		jsonx.UnmarshalLenient([]byte(out), &r)
		return r.State
	}
	stopWritDev(t, dev)
	dev = startWritDev(t, dir, addr, raftAddr)
	if got := submit("support-bot"); got != "denied" {
		stopWritDev(t, dev)
		t.Fatalf("after a restart, support-bot's intent is %q, want denied by the applied policy", got)
	}
	stopWritDev(t, dev)
	cmd, banner := startDevBanner(t, writBin, "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir, "--reset-policy")
	defer stopWritDev(t, cmd)
	policy := ""
	for _, line := range banner {
		if strings.HasPrefix(line, "Policy:") {
			policy = line
		}
	}
	if !strings.Contains(policy, "the permissive dev policy") {
		t.Fatalf("banner after --reset-policy says %q", policy)
	}
	if got := submit("support-bot"); got != "completed" {
		t.Fatalf("after --reset-policy, support-bot's intent is %q, want completed", got)
	}
}

// TestDevStepsRun runs every command writ dev's banner prints, as printed
// and in order, in a shell against that writ dev; then the commands of the
// README's "Try it" (with the test server's address for writ dev's default
// one, and bin/ and .dev/ linked to this test's binary and state).
func TestDevStepsRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, raftAddr := freePort(t), freePort(t)
	cmd, lines := startDevBanner(t, writBin, "--data-dir", dir, "--addr", addr, "--raft-addr", raftAddr, "--tools-dir", toolsDir)
	defer stopWritDev(t, cmd)
	var steps []string
	for _, l := range lines {
		if strings.HasPrefix(l, "  ") {
			steps = append(steps, strings.TrimSpace(l))
		}
	}
	if len(steps) < 10 {
		t.Fatalf("the banner has %d commands:\n%s", len(steps), strings.Join(lines, "\n"))
	}
	runSteps(t, t.TempDir(), steps)

	// The README's Try it.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "## Try it\n")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no sh block under ## Try it")
	}
	block = strings.ReplaceAll(block, "http://127.0.0.1:7070", "http://"+addr)
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "bin"), 0o755)
	if err := os.Symlink(writBin, filepath.Join(work, "bin", "writ")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(work, ".dev")); err != nil {
		t.Fatal(err)
	}
	runSteps(t, work, []string{block})
}

// runSteps runs commands in bash, in dir, stopping at the first that fails.
func runSteps(t *testing.T, dir string, commands []string) {
	t.Helper()
	script := "set -euo pipefail\n" + strings.Join(commands, "\n") + "\n"
	sh := exec.Command("bash", "-c", script)
	sh.Dir, sh.Env = dir, withoutWritEnv()
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the steps failed (%v):\n%s\n--- output:\n%s", err, script, out)
	}
	if !strings.Contains(string(out), `"valid":true`) {
		t.Fatalf("no receipt verified:\n%s", out)
	}
}

// withoutWritEnv is the environment without WRIT_ variables, as a new
// user's shell has it.
func withoutWritEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WRIT_") {
			env = append(env, kv)
		}
	}
	return env
}
