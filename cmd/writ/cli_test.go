package main_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/protocol/protocoltest"
)

// writBin is the built binary; toolsDir holds echo.wasm.
var writBin, toolsDir, witnessBin string

func TestMain(m *testing.M) {
	// These tests mostly wait on the processes they start (writ dev,
	// servers, agents): 8 at once unless -parallel says otherwise. The
	// tests with a timing margin (TestCancelRunningUnderBwrap) or several
	// servers stay serial.
	testtier.Parallel(8)
	dir, err := os.MkdirTemp("", "writ-cli-test")
	if err != nil {
		panic(err)
	}
	// The binary, the agent tests' witness tool (which counts its runs in a
	// file) and the dev tools' module as `make build` makes it, built at
	// once: each go build spends most of its time linking, on one core.
	writBin, witnessBin, toolsDir = filepath.Join(dir, "writ"), filepath.Join(dir, "witness"), filepath.Join(dir, "tools")
	builds := map[string]*exec.Cmd{
		"writ":      exec.Command("go", "build", "-o", writBin, "."),
		"witness":   exec.Command("go", "build", "-o", witnessBin, "../../nodeagent/internal/witness"),
		"echo.wasm": exec.Command("go", "build", "-trimpath", "-buildmode=c-shared", "-o", filepath.Join(toolsDir, "echo.wasm"), "../../sandbox/tools/echo"),
	}
	builds["echo.wasm"].Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	for _, b := range builds {
		b.Stderr = os.Stderr
		if err := b.Start(); err != nil {
			os.RemoveAll(dir)
			panic("starting go build: " + err.Error())
		}
	}
	var failed []string
	for name, b := range builds {
		if err := b.Wait(); err != nil {
			failed = append(failed, name+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		os.RemoveAll(dir)
		panic("building " + strings.Join(failed, "; "))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the built binary and returns its stdout and exit code.
func run(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(writBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		if ee.ExitCode() == 2 {
			t.Logf("writ %s: %s", strings.Join(args, " "), errb.String())
		}
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("writ %v: %v", args, err)
	return "", -1
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkVerdict checks the one JSON line of a verify command and its exit code.
func checkVerdict(t *testing.T, out string, code int, valid bool, wantErr string) {
	t.Helper()
	want := `{"valid":true}` + "\n"
	wantCode := 0
	if !valid {
		want = `{"valid":false,"error":"` + wantErr + `"}` + "\n"
		wantCode = 1
	}
	if out != want || code != wantCode {
		t.Errorf("got %q exit %d, want %q exit %d", out, code, want, wantCode)
	}
}

func TestVectorsIntentVerifyCLI(t *testing.T) {
	t.Parallel()
	var v protocoltest.IntentVectors
	protocoltest.Load(t, "intent.json", &v)
	dir := t.TempDir()
	var keyArgs []string
	for id, secret := range v.Keys {
		keyArgs = append(keyArgs, "--key", id+"="+writeFile(t, dir, id+".key", secret+"\n"))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			args := append([]string{"intent", "verify", "--now", v.Now, "--max-ttl", "900s", "--skew", "30s"}, keyArgs...)
			out, code := run(t, c.IntentJSON, args...)
			checkVerdict(t, out, code, c.Valid, c.Error)
		})
	}
}

func TestVectorsApprovalVerifyCLI(t *testing.T) {
	t.Parallel()
	var v protocoltest.ApprovalVectors
	protocoltest.Load(t, "approval.json", &v)
	dir := t.TempDir()
	args := []string{"approval", "verify", "--now", v.Now, "--intent", writeFile(t, dir, "intent.json", v.IntentJSON)}
	for id, k := range v.ApproverKeys {
		args = append(args, "--approver-key", id+"="+k.Public)
	}
	for _, n := range v.ConsumedNonces {
		args = append(args, "--consumed", n)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			out, code := run(t, c.ApprovalJSON, args...)
			checkVerdict(t, out, code, c.Valid, c.Error)
		})
	}
}

// TestSignVerifyRoundTrip: keys from keygen sign an intent and an approval that
// the verify commands accept, and reject once tampered with.
func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var hk, ek struct {
		PrivateFile string `json:"private_file"`
		PublicFile  string `json:"public_file"`
		Public      string `json:"public"`
	}
	out, code := run(t, "", "keygen", "hmac", "--id", "orch-1", "--dir", dir)
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &hk) != nil {
		t.Fatalf("keygen hmac: %q exit %d", out, code)
	}
	out, code = run(t, "", "keygen", "ed25519", "--id", "alice", "--dir", dir)
	if code != 0 || jsonx.UnmarshalLenient([]byte(out), &ek) != nil {
		t.Fatalf("keygen ed25519: %q exit %d", out, code)
	}
	for path, mode := range map[string]os.FileMode{hk.PrivateFile: 0o600, ek.PrivateFile: 0o600, ek.PublicFile: 0o644} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	seed := mustKey(t, ek.PrivateFile)
	if got := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)); got != ek.Public {
		t.Errorf("public key %s is not that of the seed (%s)", ek.Public, got)
	}
	if len(mustKey(t, hk.PrivateFile)) != 32 {
		t.Error("HMAC secret is not 32 bytes")
	}
	if _, code := run(t, "", "keygen", "hmac", "--id", "orch-1", "--dir", dir); code != 2 {
		t.Errorf("keygen over an existing key: exit %d, want 2", code)
	}

	const now = "2026-11-22T10:00:00Z"
	intent, code := run(t, "", "intent", "sign", "--key", "orch-1="+hk.PrivateFile, "--tenant", "acme",
		"--principal", "support-bot", "--run", "run-1", "--tool", "send_email",
		"--params", `{"to":["cfo@example.com"],"amount":1.50}`, "--target-label", "region=eu", "--now", now, "--ttl", "10m")
	if code != 0 {
		t.Fatalf("intent sign: exit %d", code)
	}
	in, err := protocol.DecodeIntent([]byte(strings.TrimSpace(intent)), 0)
	if err != nil {
		t.Fatalf("signed intent does not decode: %v\n%s", err, intent)
	}
	if in.ExpiresAt != "2026-11-22T10:10:00Z" || in.Target.Labels["region"] != "eu" {
		t.Errorf("signed intent: %+v", in)
	}
	verify := []string{"intent", "verify", "--key", "orch-1=" + hk.PrivateFile, "--now", "2026-11-22T10:01:00Z"}
	out, code = run(t, intent, verify...)
	checkVerdict(t, out, code, true, "")
	out, code = run(t, strings.Replace(intent, "cfo@", "cf0@", 1), verify...)
	checkVerdict(t, out, code, false, "bad_signature")
	out, code = run(t, intent, "intent", "verify", "--key", "orch-1="+hk.PrivateFile, "--now", "2026-11-22T10:11:00Z")
	checkVerdict(t, out, code, false, "expired")
	out, code = run(t, intent, "intent", "verify", "--key", "orch-1="+hk.PrivateFile, "--now", "2026-11-22T10:01:00Z", "--max-ttl", "5m")
	checkVerdict(t, out, code, false, "ttl_too_long")

	intentFile := writeFile(t, dir, "intent.json", intent)
	approval, code := run(t, "", "approval", "sign", "--intent", intentFile, "--key", "alice="+ek.PrivateFile,
		"--approver", "alice", "--now", "2026-11-22T10:01:00Z")
	if code != 0 {
		t.Fatalf("approval sign: exit %d", code)
	}
	a, err := protocol.DecodeApproval([]byte(strings.TrimSpace(approval)), 0)
	if err != nil {
		t.Fatalf("signed approval does not decode: %v", err)
	}
	averify := []string{"approval", "verify", "--intent", intentFile, "--approver-key", "alice=" + ek.Public + ":alice", "--now", "2026-11-22T10:02:00Z"}
	out, code = run(t, approval, averify...)
	checkVerdict(t, out, code, true, "")
	out, code = run(t, approval, append(averify, "--consumed", a.Nonce)...)
	checkVerdict(t, out, code, false, "approval_replayed")
	out, code = run(t, approval, "approval", "verify", "--intent", intentFile, "--approver-key", "alice="+ek.Public+":bob", "--now", "2026-11-22T10:02:00Z")
	checkVerdict(t, out, code, false, "approval_invalid")

	out, code = run(t, intent, append(verify, "-o", "text")...)
	if out != "valid\n" || code != 0 {
		t.Errorf("-o text: got %q exit %d", out, code)
	}
}

func mustKey(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return k
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"intent", "verify", "--now", "yesterday"},
		{"intent", "verify", "--key", "nofile"},
		{"intent", "sign", "--tool", "echo"},
		{"keygen", "rsa", "--id", "x"},
		{"keygen", "hmac"},
		{"version", "-o", "yaml"},
		{"nosuchcommand"},
	} {
		if _, code := run(t, "", args...); code != 2 {
			t.Errorf("writ %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// exitFor is the exit status docs/cli.md gives the intent commands for an
// answer in state, after a command that waited (or not).
func exitFor(state string, waited bool) int {
	switch state {
	case "completed":
		return 0
	case "denied", "rejected", "expired", "canceled":
		return 1
	case "failed", "unknown":
		return 4
	}
	if waited {
		return 5
	}
	return 0
}

// TestVectorsIntentExplain: `intent verify --explain` prints the vectors'
// exact signing inputs, and the signature it expects is the intent's own
// for every valid vector and differs for a bad signature.
func TestVectorsIntentExplain(t *testing.T) {
	t.Parallel()
	var v protocoltest.IntentVectors
	protocoltest.Load(t, "intent.json", &v)
	dir := t.TempDir()
	var keyArgs []string
	for id, secret := range v.Keys {
		keyArgs = append(keyArgs, "--key", id+"="+writeFile(t, dir, id+".key", secret+"\n"))
	}
	checked := 0
	for _, c := range v.Cases {
		if c.SigningInput == "" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			args := append([]string{"intent", "verify", "--explain", "--now", v.Now, "--max-ttl", "900s", "--skew", "30s"}, keyArgs...)
			out, code := run(t, c.IntentJSON, args...)
			first, rest, _ := strings.Cut(out, "\n")
			var x struct {
				SigningInput string `json:"signing_input"`
				ExpectedSig  string `json:"expected_sig"`
				Sig          string `json:"sig"`
			}
			if err := jsonx.UnmarshalLenient([]byte(first), &x); err != nil {
				t.Fatalf("explanation %q: %v", first, err)
			}
			if x.SigningInput != c.SigningInput {
				t.Errorf("signing input\n%q\nwant\n%q", x.SigningInput, c.SigningInput)
			}
			if c.Valid && x.ExpectedSig != x.Sig {
				t.Errorf("expected sig %q, the valid intent carries %q", x.ExpectedSig, x.Sig)
			}
			if c.Error == "bad_signature" && (x.ExpectedSig == "" || x.ExpectedSig == x.Sig) {
				t.Errorf("bad signature: expected sig %q, intent's %q; want them to differ", x.ExpectedSig, x.Sig)
			}
			checkVerdict(t, rest, code, c.Valid, c.Error)
		})
		checked++
	}
	if checked == 0 {
		t.Fatal("no vector has a signing input")
	}
}
