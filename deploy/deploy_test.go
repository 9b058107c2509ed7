package deploy_test

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/deploy"
	"github.com/writhq/writ/nodeagent"
)

func agent(t *testing.T) deploy.Agent {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return deploy.Agent{Binary: exe, Config: "/etc/writ/agent.json",
		ReadWrite: []string{"/var/lib/writ/agent", "/srv/rootfs"}, LogFile: "/usr/local/var/log/writ-agent.log"}
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	a := agent(t)
	unit, err := deploy.AgentSystemdUnit(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nExecStart=" + a.Binary + " agent --config /etc/writ/agent.json\n",
		"\nReadWritePaths=/var/lib/writ/agent /srv/rootfs\n",
		"\nNoNewPrivileges=yes\n", "\nProtectSystem=strict\n", "\nPrivateTmp=yes\n",
		"\nRuntimeDirectory=writ-agent\n",
		"\nWantedBy=multi-user.target\n",
	} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	// Nothing that would break a sandbox tier is switched on.
	for _, bad := range []string{"RestrictNamespaces=", "SystemCallFilter=", "MemoryDenyWriteExecute=", "ProtectControlGroups=", "PrivateDevices=", "ProtectHostname="} {
		for _, line := range strings.Split(string(unit), "\n") {
			if strings.HasPrefix(line, bad) {
				t.Errorf("unit sets %s, which breaks a tier", line)
			}
		}
	}
	// systemd itself reads the unit: no unknown keys, no bad values.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: systemd-analyze is missing (Debian: apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed: the unit is not checked by systemd")
	}
	path := filepath.Join(t.TempDir(), deploy.AgentUnitName)
	os.WriteFile(path, unit, 0o644)
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, deploy.AgentUnitName) || strings.Contains(line, "Unknown") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// plist is the shape of a launchd property list's top dictionary.
type plist struct {
	XMLName xml.Name `xml:"plist"`
	Dict    struct {
		Items []struct {
			XMLName xml.Name
			Value   string   `xml:",chardata"`
			Strings []string `xml:"string"`
		} `xml:",any"`
	} `xml:"dict"`
}

func TestLaunchdPlist(t *testing.T) {
	t.Parallel()
	a := agent(t)
	b, err := deploy.AgentLaunchdPlist(a)
	if err != nil {
		t.Fatal(err)
	}
	var p plist
	if err := xml.Unmarshal(b, &p); err != nil {
		t.Fatalf("the plist is not XML: %v\n%s", err, b)
	}
	got := map[string]string{}
	var args []string
	items := p.Dict.Items
	for i := 0; i+1 < len(items); i += 2 {
		if items[i].XMLName.Local != "key" {
			t.Fatalf("item %d is %s, want a key", i, items[i].XMLName.Local)
		}
		k, v := items[i].Value, items[i+1]
		got[k] = v.XMLName.Local + ":" + strings.TrimSpace(v.Value)
		if k == "ProgramArguments" {
			args = v.Strings
		}
	}
	if got["Label"] != "string:"+deploy.AgentLaunchdLabel || got["RunAtLoad"] != "true:" || got["KeepAlive"] != "true:" ||
		got["StandardErrorPath"] != "string:"+a.LogFile {
		t.Fatalf("plist keys: %v", got)
	}
	if strings.Join(args, " ") != a.Binary+" agent --config /etc/writ/agent.json" {
		t.Fatalf("ProgramArguments = %q", args)
	}
	a.LogFile = ""
	if _, err := deploy.AgentLaunchdPlist(a); err == nil {
		t.Fatal("a plist without a log file rendered")
	}
}

func TestPathsThatCannotBeCarriedVerbatimAreRefused(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"relative/writ", "/opt/my writ", "/opt/100%", "/opt/$HOME", `/opt/"q"`, "/opt/a\nExecStartPre=/bin/sh", "/opt/<x>", "/opt/../etc"} {
		a := agent(t)
		a.Binary = p
		if _, err := deploy.AgentSystemdUnit(a); err == nil {
			t.Errorf("binary %q rendered into a unit", p)
		}
		if _, err := deploy.AgentLaunchdPlist(a); err == nil {
			t.Errorf("binary %q rendered into a plist", p)
		}
	}
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	b, err := deploy.Example("agent.example.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodeagent.ParseConfig(b); err != nil {
		t.Errorf("agent.example.json: %v", err)
	}
	b, err = deploy.Example("server.example.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "server.json")
	os.WriteFile(path, b, 0o644)
	f, err := controlplane.LoadFile(path)
	if err != nil {
		t.Fatalf("server.example.json: %v", err)
	}
	cfg := controlplane.DefaultConfig()
	if err := f.Apply(&cfg); err != nil && !strings.Contains(err.Error(), "/etc/writ/") {
		t.Errorf("server.example.json: %v", err)
	}
	if _, err := deploy.Example("../go.mod"); err == nil {
		t.Error("Example read a file that is not an example")
	}
}
