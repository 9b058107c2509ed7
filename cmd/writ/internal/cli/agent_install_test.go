package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/nodeagent"
)

// runCmd runs a command built by newCmd with args, in-process.
func runCmd(t *testing.T, newCmd func(*env) *cobra.Command, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCmdStderr(t, newCmd, args...)
	return out, err
}

// runCmdStderr is runCmd that returns standard error too.
func runCmdStderr(t *testing.T, newCmd func(*env) *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{in: strings.NewReader(""), out: &out, err: &errb, now: now, output: "json"}
	cmd := newCmd(e)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestAgentInstallWritesUnderRoot(t *testing.T) {
	root := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "join-token")
	os.WriteFile(tokenFile, []byte("wjt_abc.def\n"), 0o600)
	out, stderr, err := runCmdStderr(t, newAgentInstall, "--platform", "linux", "--root", root, "--server", "s1:7443, s2:7443",
		"--token-file", tokenFile, "--data-dir", "/var/lib/writ/agent", "--tools", "/etc/writ/tools",
		"--labels", "site=lab,gpu=none", "--binary", "/usr/local/bin/writ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"enabled":false`) {
		t.Errorf("output %s: want enabled false under --root", out)
	}
	if stderr != "" {
		t.Errorf("stderr %q: want nothing for a token read from a file", stderr)
	}
	// The configuration holds the tools' env (their secrets): 0600.
	if m := mode(t, filepath.Join(root, "/etc/writ/agent.json")); m != 0o600 {
		t.Errorf("config mode %v, want 0600", m)
	}
	cfg, err := nodeagent.LoadConfig(filepath.Join(root, "/etc/writ/agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Servers, []string{"s1:7443", "s2:7443"}) || cfg.DataDir != "/var/lib/writ/agent" ||
		cfg.TokenFile != "/var/lib/writ/agent/join-token" || cfg.Labels["gpu"] != "none" || cfg.Concurrency != 4 {
		t.Fatalf("config %+v", cfg)
	}
	data := filepath.Join(root, "/var/lib/writ/agent")
	if m := mode(t, data); m != 0o700 {
		t.Errorf("data directory mode %v, want 0700", m)
	}
	tok := filepath.Join(data, "join-token")
	if b, _ := os.ReadFile(tok); string(b) != "wjt_abc.def\n" || mode(t, tok) != 0o600 {
		t.Errorf("token file %q mode %v, want the token, 0600", b, mode(t, tok))
	}
	if st, err := os.Stat(filepath.Join(root, "/etc/writ/tools")); err != nil || !st.IsDir() {
		t.Errorf("tools directory not made: %v", err)
	}
	unit, err := os.ReadFile(filepath.Join(root, "/etc/systemd/system/writ-agent.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/local/bin/writ agent --config /etc/writ/agent.json\n") ||
		!strings.Contains(string(unit), "\nReadWritePaths=/var/lib/writ/agent\n") {
		t.Errorf("unit:\n%s", unit)
	}

	// Installing again (a new token) replaces the files; manifests stay.
	os.WriteFile(filepath.Join(root, "/etc/writ/tools/echo.json"), []byte("{}"), 0o644)
	// A token on the command line still works, and warns.
	_, stderr, err = runCmdStderr(t, newAgentInstall, "--platform", "linux", "--root", root, "--server", "s1:7443", "--token", "second", "--binary", "/usr/local/bin/writ")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tok); string(b) != "second\n" {
		t.Errorf("token after reinstall: %q", b)
	}
	if !strings.Contains(stderr, "warning: --token puts the join token on the command line") {
		t.Errorf("stderr %q: want a warning for --token", stderr)
	}
	// And from the environment.
	t.Setenv("WRIT_JOIN_TOKEN", "third")
	if _, err := runCmd(t, newAgentInstall, "--platform", "linux", "--root", root, "--server", "s1:7443", "--binary", "/usr/local/bin/writ"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(tok); string(b) != "third\n" {
		t.Errorf("token from $WRIT_JOIN_TOKEN: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "/etc/writ/tools/echo.json")); err != nil {
		t.Error("reinstall removed a manifest from the tools directory")
	}
}

func TestAgentInstallLaunchd(t *testing.T) {
	root := t.TempDir()
	if _, err := runCmd(t, newAgentInstall, "--platform", "darwin", "--root", root, "--server", "s1:7443", "--token", "t",
		"--data-dir", "/usr/local/var/writ/agent", "--config", "/usr/local/etc/writ/agent.json", "--binary", "/usr/local/bin/writ"); err != nil {
		t.Fatal(err)
	}
	plist, err := os.ReadFile(filepath.Join(root, "/Library/LaunchDaemons/com.writhq.writ-agent.plist"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plist), "<string>/usr/local/etc/writ/agent.json</string>") {
		t.Errorf("plist:\n%s", plist)
	}
	if _, err := nodeagent.LoadConfig(filepath.Join(root, "/usr/local/etc/writ/agent.json")); err != nil {
		t.Fatal(err)
	}
}

func TestAgentInstallRefusesBadInputAndWritesNothing(t *testing.T) {
	base := []string{"--root", "", "--platform", "linux", "--binary", "/usr/local/bin/writ"}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no token":         {[]string{"--server", "s1:1"}, "token"},
		"token with space": {[]string{"--server", "s1:1", "--token", "a b"}, "one word"},
		"bad server":       {[]string{"--server", "s1", "--token", "t"}, "host:port"},
		"plain server":     {[]string{"--server", "http://s1:1", "--token", "t"}, "enrolls over TLS"},
		"server path":      {[]string{"--server", "https://s1:1/api", "--token", "t"}, "host:port"},
		"relative data":    {[]string{"--server", "s1:1", "--token", "t", "--data-dir", "data"}, "data_dir"},
		"bad label":        {[]string{"--server", "s1:1", "--token", "t", "--labels", "site"}, "k=v"},
		"other platform":   {[]string{"--server", "s1:1", "--token", "t", "--platform", "windows"}, "supports linux"},
		"spaced binary":    {[]string{"--server", "s1:1", "--token", "t", "--binary", "/opt/my writ"}, "binary"},
		"relative config":  {[]string{"--server", "s1:1", "--token", "t", "--config", "agent.json"}, "--config"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			args := append(slices.Clone(base), c.args...)
			args[1] = root
			_, err := runCmd(t, newAgentInstall, args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, c.want)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Fatalf("a refused install wrote %v", entries)
			}
		})
	}
}

func TestServiceCommandsRunNoShell(t *testing.T) {
	linux, _ := serviceCommands("linux", "/etc/systemd/system/writ-agent.service")
	if len(linux) != 3 || strings.Join(linux[1], " ") != "systemctl enable writ-agent.service" || strings.Join(linux[2], " ") != "systemctl restart writ-agent.service" {
		t.Errorf("linux: %q", linux)
	}
	mac, optional := serviceCommands("darwin", "/Library/LaunchDaemons/com.writhq.writ-agent.plist")
	if strings.Join(mac[2], " ") != "launchctl bootstrap system /Library/LaunchDaemons/com.writhq.writ-agent.plist" || !optional[0] || optional[2] {
		t.Errorf("darwin: %q %v", mac, optional)
	}
	for _, argv := range append(linux, mac...) {
		if slices.ContainsFunc(argv, func(a string) bool { return strings.ContainsAny(a, "|;&$`") }) || argv[0] == "sh" {
			t.Errorf("%q looks like shell", argv)
		}
	}
}
