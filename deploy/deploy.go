// Package deploy holds what installs Writ as a service, embedded in the
// binary: the systemd unit and launchd plist of `writ agent` (rendered by
// `writ agent install`) and example agent and server configuration files.
package deploy

import (
	"bytes"
	"embed"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"text/template"
)

//go:embed writ-agent.service com.writhq.writ-agent.plist agent.example.json server.example.json
var files embed.FS

// Names of the agent's service on each platform.
const (
	AgentUnitName     = "writ-agent.service"    // systemd
	AgentLaunchdLabel = "com.writhq.writ-agent" // launchd
)

// Agent is what the agent's service definitions name.
type Agent struct {
	// Binary is the absolute path of the writ executable.
	Binary string
	// Config is the absolute path of the agent configuration file.
	Config string
	// ReadWrite lists the only host paths the service may write besides
	// /sys/fs/cgroup: the data directory and runc's root filesystem
	// (systemd; the first one is the data directory).
	ReadWrite []string
	// LogFile receives the agent's output (launchd; systemd has the journal).
	LogFile string
}

// Validate refuses a path the unit files cannot carry verbatim. Paths are
// limited to letters, digits and "/._-+@:,", so that nothing in them is
// ever read by systemd or launchd as quoting, a specifier or markup.
func (a Agent) Validate() error {
	paths := map[string]string{"binary": a.Binary, "config": a.Config}
	if len(a.ReadWrite) == 0 {
		return fmt.Errorf("deploy: no writable paths: the agent needs its data directory")
	}
	for i, p := range a.ReadWrite {
		paths[fmt.Sprintf("read_write[%d]", i)] = p
	}
	if a.LogFile != "" {
		paths["log file"] = a.LogFile
	}
	for name, p := range paths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || !plainPath(p) {
			return fmt.Errorf("deploy: %s %q must be a clean absolute path of letters, digits and /._-+@:,", name, p)
		}
	}
	return nil
}

func plainPath(p string) bool {
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.' ||
			c == '_' || c == '-' || c == '+' || c == '@' || c == ':' || c == ',') {
			return false
		}
	}
	return true
}

// AgentSystemdUnit renders the agent's systemd unit.
func AgentSystemdUnit(a Agent) ([]byte, error) { return render("writ-agent.service", a, false) }

// AgentLaunchdPlist renders the agent's launchd property list. LogFile is
// required.
func AgentLaunchdPlist(a Agent) ([]byte, error) {
	if a.LogFile == "" {
		return nil, fmt.Errorf("deploy: the launchd plist needs a log file")
	}
	return render("com.writhq.writ-agent.plist", a, true)
}

func render(name string, a Agent, escapeXML bool) ([]byte, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	text, err := files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, err
	}
	if escapeXML { // validated paths need none; this keeps it so
		esc := func(s string) string {
			var b bytes.Buffer
			xml.EscapeText(&b, []byte(s))
			return b.String()
		}
		a.Binary, a.Config, a.LogFile = esc(a.Binary), esc(a.Config), esc(a.LogFile)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, a); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Example returns one of the example configuration files:
// "agent.example.json" or "server.example.json".
func Example(name string) ([]byte, error) {
	switch name {
	case "agent.example.json", "server.example.json":
		return files.ReadFile(name)
	}
	return nil, fmt.Errorf("deploy: no example %q", name)
}
