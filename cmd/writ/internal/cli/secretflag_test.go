package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/controlplane"
)

// TestDevBannerHasNoSecret: every command writ dev prints as a next step
// would show no secret in a process listing: no secret value in its argv,
// and secrets passed as files (WRIT_TOKEN_FILE, --token-file), never as
// --token VALUE.
func TestDevBannerHasNoSecret(t *testing.T) {
	dir := t.TempDir()
	creds := &controlplane.DevCredentials{Addr: "http://127.0.0.1:7070", Tenant: "dev",
		Orchestrator: controlplane.DevHMACKey{KeyID: "dev-orch", Secret: "T1JDSEVTVFJBVE9SLVNFQ1JFVC1WQUxVRQ=="},
		Approver:     controlplane.DevEdKey{KeyID: "dev-approver", Approver: "dev-approver", Seed: "QVBQUk9WRVItU0VFRC1WQUxVRS0zMi1CWVRFUyEhIQ=="},
		AdminToken:   "ADMINTOKENVALUE0123456789abcdef", LedgerSeed: "TEVER0VSLVNFRUQ="}
	secrets := []string{creds.Orchestrator.Secret, creds.Approver.Seed, creds.AdminToken, creds.LedgerSeed}
	var out bytes.Buffer
	printDevSteps(&env{out: &out}, dir, creds)
	var commands int
	for _, line := range strings.Split(out.String(), "\n") {
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("the banner prints a secret: %q", line)
			}
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "writ ") {
			continue
		}
		commands++
		for _, arg := range strings.Fields(line) {
			if arg == "--token" || strings.HasPrefix(arg, "--token=") {
				t.Errorf("a banner command passes the token on its command line: %q", line)
			}
		}
	}
	if commands < 5 || !strings.Contains(out.String(), "WRIT_TOKEN_FILE="+filepath.Join(dir, devAdminTokenFile)) {
		t.Fatalf("the banner lacks its commands or the admin token file:\n%s", out.String())
	}
	// The file the banner names holds the token, 0600.
	if err := writeDevKeys(dir, creds); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, devAdminTokenFile)
	if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) != creds.AdminToken || mode(t, p) != 0o600 {
		t.Fatalf("%s: %q mode %v, want the admin token, 0600", p, b, mode(t, p))
	}
}

// TestSecretFlag: the file, the environment, and the flag (which warns),
// in that order; both --token and --token-file is an error.
func TestSecretFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(" from-file\n"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, c := range []struct {
		name, value, file, env, envFile string
		want, warn, err                 string
	}{
		{name: "file", file: file, env: "from-env", want: "from-file"},
		{name: "env", env: "from-env", want: "from-env"},
		{name: "env file", envFile: file, env: "from-env", want: "from-file"},
		{name: "env file missing", envFile: file + ".missing", err: "$WRIT_TOKEN_FILE"},
		{name: "flag", value: "from-flag", env: "from-env", want: "from-flag", warn: "warning: --token puts the admin token on the command line"},
		{name: "both", value: "x", file: file, err: "not both"},
		{name: "empty file", file: empty, err: "empty"},
		{name: "missing file", file: file + ".missing", err: "--token-file"},
		{name: "none", want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("WRIT_TOKEN", c.env)
			t.Setenv("WRIT_TOKEN_FILE", c.envFile)
			var errb bytes.Buffer
			f := adminTokenFlag()
			f.value, f.file = c.value, c.file
			got, err := f.get(&env{err: &errb})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			if c.warn == "" && errb.Len() > 0 || !strings.Contains(errb.String(), c.warn) {
				t.Fatalf("stderr %q, want %q", errb.String(), c.warn)
			}
		})
	}
	t.Setenv("WRIT_TOKEN", "")
	t.Setenv("WRIT_TOKEN_FILE", "")
	f := adminTokenFlag()
	if _, err := f.require(&env{}); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("require with nothing given: %v", err)
	}
}
