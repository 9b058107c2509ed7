package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"
	"github.com/writhq/writ/deploy"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/nodeagent"
)

// Where the service definitions go on each platform.
const (
	systemdUnitDir   = "/etc/systemd/system"
	launchdDaemonDir = "/Library/LaunchDaemons"
	launchdLogFile   = "/usr/local/var/log/writ-agent.log"
)

// agentInstall is one planned installation: every file it writes, decided
// and checked before the first is written.
type agentInstall struct {
	platform string // "linux" (systemd) or "darwin" (launchd)
	cfg      nodeagent.Config
	config   string // path of the configuration file
	token    string
	unitPath string
	unit     []byte
}

// newAgentInstall is `writ agent install`; the lead's `writ agent` adds it
// as a subcommand.
func newAgentInstall(e *env) *cobra.Command {
	var servers, dataDir, toolsDir, root, config, binary, labels, platform string
	joinToken := joinTokenFlag()
	var concurrency int
	d := nodeagent.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "install --server ADDR[,ADDR] --token-file FILE [--data-dir D] [--tools DIR] [--root DIR]",
		Short: "Install writ agent as a service (systemd on Linux, launchd on macOS) and start it",
		Long: `Write the agent's configuration file (0600: it holds the tools' env), its join
token (0600, read from --token-file or $WRIT_JOIN_TOKEN) in a new 0700 data
directory, the tools directory (the node owner's allowlist, left as it is when it
exists) and a systemd unit (Linux) or launchd plist (macOS) that runs
"writ agent --config FILE"; then enable and start the service (systemctl, or
launchctl bootstrap). Must run as root. With --root DIR the files are written
under DIR, for packaging or review, and no service is enabled. docs/agent.md.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			token, err := joinToken.require(e)
			if err != nil {
				return err
			}
			cfg := d
			hosts, plain, err := agentServers([]string{servers})
			if err != nil {
				return err
			}
			if plain {
				return errors.New("--server: an installed agent enrolls over TLS; give host:port or https://host:port")
			}
			cfg.Servers = hosts
			cfg.DataDir, cfg.ToolsDir, cfg.Concurrency = dataDir, toolsDir, concurrency
			cfg.TokenFile = filepath.Join(dataDir, "join-token")
			if cfg.Labels, err = parseLabels(labels); err != nil {
				return err
			}
			if binary == "" {
				if binary, err = os.Executable(); err == nil {
					binary, err = filepath.EvalSymlinks(binary)
				}
				if err != nil {
					return fmt.Errorf("cannot tell where this writ binary is (use --binary): %v", err)
				}
			}
			in, err := planAgentInstall(platform, cfg, config, token, binary)
			if err != nil {
				return err
			}
			if root == "" {
				if os.Geteuid() != 0 {
					return errors.New("installing a service needs root; use --root DIR to only write the files")
				}
				if err := serviceManagerRunning(in.platform); err != nil {
					return err
				}
			}
			if err := in.write(root); err != nil {
				return err
			}
			if root == "" {
				if err := enableService(in.platform, in.unitPath); err != nil {
					return err
				}
			}
			return e.printJSON(map[string]any{"config": in.config, "unit": in.unitPath, "data_dir": cfg.DataDir,
				"tools_dir": cfg.ToolsDir, "root": root, "enabled": root == ""})
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "server", os.Getenv("WRIT_SERVER"), "the control-plane servers, host:port or https://host:port, comma-separated (default $WRIT_SERVER)")
	joinToken.register(f)
	f.StringVar(&dataDir, "data-dir", d.DataDir, "the agent's data directory (created 0700)")
	f.StringVar(&toolsDir, "tools", d.ToolsDir, "the tool allowlist directory: one manifest per *.json file")
	f.StringVar(&root, "root", "", "write the files under this directory and enable nothing")
	f.StringVar(&config, "config", nodeagent.DefaultConfigPath(), "where to write the agent configuration")
	f.StringVar(&binary, "binary", "", "the writ executable the service runs (default: this one)")
	f.StringVar(&labels, "labels", "", "node labels, k=v[,k=v]")
	f.IntVar(&concurrency, "concurrency", d.Concurrency, "how many tools run at once")
	f.StringVar(&platform, "platform", runtime.GOOS, "linux or darwin: which service manager to write for")
	f.MarkHidden("platform")
	return cmd
}

// planAgentInstall checks every input and renders the service definition,
// so that nothing is written unless everything can be.
func planAgentInstall(platform string, cfg nodeagent.Config, config, token, binary string) (*agentInstall, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(config) || filepath.Clean(config) != config {
		return nil, fmt.Errorf("--config %q must be a clean absolute path", config)
	}
	if token == "" || len(token) > 4096 || strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return nil, errors.New("the join token must be one word")
	}
	in := &agentInstall{platform: platform, cfg: cfg, config: config, token: token}
	a := deploy.Agent{Binary: binary, Config: config, ReadWrite: []string{cfg.DataDir}}
	if cfg.RuncRootFS != "" {
		a.ReadWrite = append(a.ReadWrite, cfg.RuncRootFS)
	}
	var err error
	switch platform {
	case "linux":
		in.unitPath = filepath.Join(systemdUnitDir, deploy.AgentUnitName)
		in.unit, err = deploy.AgentSystemdUnit(a)
	case "darwin":
		a.LogFile = launchdLogFile
		in.unitPath = filepath.Join(launchdDaemonDir, deploy.AgentLaunchdLabel+".plist")
		in.unit, err = deploy.AgentLaunchdPlist(a)
	default:
		return nil, fmt.Errorf("writ agent install supports linux (systemd) and darwin (launchd), not %s", platform)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// write writes the planned files under root ("" for the real system).
func (in *agentInstall) write(root string) error {
	at := func(p string) string { return filepath.Join(root, p) }
	if root == "" {
		at = func(p string) string { return p }
	}
	data := at(in.cfg.DataDir)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(data, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(at(in.cfg.ToolsDir), 0o755); err != nil {
		return err
	}
	cfgJSON, err := json.Marshal(in.cfg, jsontext.WithIndent("  "))
	if err != nil {
		return err
	}
	if in.platform == "darwin" {
		if err := os.MkdirAll(at(filepath.Dir(launchdLogFile)), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{at(in.cfg.TokenFile), []byte(in.token + "\n"), secretfile.Mode},
		{at(in.config), append(cfgJSON, '\n'), secretfile.Mode}, // the tools' env holds their secrets
		{at(in.unitPath), in.unit, 0o644},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := secretfile.WriteMode(f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// serviceCommands are the commands that enable and (re)start the installed
// service, each an argv run directly, never through a shell. A command
// marked optional may fail (launchctl bootout of a service not loaded).
func serviceCommands(platform, unitPath string) (cmds [][]string, optional []bool) {
	if platform == "darwin" {
		target := "system/" + deploy.AgentLaunchdLabel
		return [][]string{
			{"launchctl", "bootout", target},
			{"launchctl", "enable", target},
			{"launchctl", "bootstrap", "system", unitPath},
		}, []bool{true, false, false}
	}
	return [][]string{
		{"systemctl", "daemon-reload"},
		{"systemctl", "enable", deploy.AgentUnitName},
		{"systemctl", "restart", deploy.AgentUnitName},
	}, []bool{false, false, false}
}

func enableService(platform, unitPath string) error {
	cmds, optional := serviceCommands(platform, unitPath)
	for i, argv := range cmds {
		bin, err := exec.LookPath(argv[0])
		if err != nil {
			return fmt.Errorf("%s not found: the files are written, enable the service yourself", argv[0])
		}
		out, err := exec.Command(bin, argv[1:]...).CombinedOutput()
		if err != nil && !optional[i] {
			return fmt.Errorf("the files are written, but %s failed: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// serviceManagerRunning refuses, before anything is written, a host whose
// service manager is not running (a container, a chroot): there would be
// nothing to enable the service with.
func serviceManagerRunning(platform string) error {
	if platform != "linux" {
		return nil
	}
	// sd_booted(3): systemd is PID 1 exactly when this directory exists.
	if st, err := os.Stat("/run/systemd/system"); err != nil || !st.IsDir() {
		return errors.New("systemd is not running on this host; use --root DIR to only write the files")
	}
	return nil
}

// parseLabels reads k=v[,k=v]; the configuration validates keys and values.
func parseLabels(s string) (map[string]string, error) {
	var labels map[string]string
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--labels: %q is not k=v", kv)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		if _, dup := labels[k]; dup {
			return nil, fmt.Errorf("--labels: %q is given twice", k)
		}
		labels[k] = v
	}
	return labels, nil
}
