package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// The files `writ tool init` writes into its folder.
const (
	toolInitRegistration = "registration.json"
	toolInitAllowlist    = "allowlist"
)

// toolInitTiers are the tiers a tool may be made for, in the order the
// help lists them.
var toolInitTiers = []string{sandbox.TierWasm, sandbox.TierBwrap, sandbox.TierProcess, sandbox.TierRunc, sandbox.TierGvisor}

// toolInitReadOnly are the host folders a command tool in bwrap, runc or
// gvisor reads to start at all (its loader and libraries), when present.
var toolInitReadOnly = []string{"/usr", "/bin", "/lib", "/lib64"}

// toolInit is what `writ tool init` is asked for.
type toolInit struct {
	name, tier, command, module, dir string
}

// toolInitFiles is what `writ tool init` wrote.
type toolInitFiles struct {
	Manifest     string   `json:"manifest"`
	Allowlist    string   `json:"allowlist"`
	Registration string   `json:"registration"`
	Hash         string   `json:"hash"`
	Next         []string `json:"next"`
}

func newToolInit(e *env) *cobra.Command {
	var ti toolInit
	cmd := &cobra.Command{
		Use:   "init NAME --tier wasm|bwrap|process|runc|gvisor (--command PATH | --module FILE) [--dir DIR]",
		Short: "Write a tool's manifest, its allowlist entry and its registration, and print the next commands",
		Long: `Write, into DIR (default ./NAME), the files that make a tool run:
  DIR/allowlist/NAME.json  the sandbox manifest (docs/tools.md): the node owner's
                           allowlist entry, for writ dev --allowlist DIR/allowlist or
                           an agent's --tools-dir
  DIR/registration.json    the registration, for writ tool apply -f
The registration holds the same manifest, so both have the same hash. --command is
the executable of the bwrap, process, runc and gvisor tiers, --module the WASI module
of the wasm tier; either must exist. An existing file is never replaced.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			ti.name = args[0]
			files, err := ti.write()
			if err != nil {
				return err
			}
			if e.output == "text" {
				fmt.Fprintf(e.out, "Wrote %s (the manifest: the allowlist entry, hash %s)\n", files.Manifest, files.Hash)
				fmt.Fprintf(e.out, "Wrote %s (the registration)\n\nNext:\n", files.Registration)
				for _, l := range files.Next {
					fmt.Fprintln(e.out, " ", l)
				}
				return nil
			}
			return e.printJSON(files)
		},
	}
	cmd.Flags().StringVar(&ti.tier, "tier", "", "the sandbox tier: wasm, bwrap, process, runc or gvisor")
	cmd.Flags().StringVar(&ti.command, "command", "", "the executable (bwrap, process, runc, gvisor)")
	cmd.Flags().StringVar(&ti.module, "module", "", "the WASI module (wasm)")
	cmd.Flags().StringVar(&ti.dir, "dir", "", "the folder to write into (default ./NAME)")
	return cmd
}

// write checks everything, then writes the two files, refusing to replace
// either: on any error nothing has been written but folders.
func (ti toolInit) write() (*toolInitFiles, error) {
	m, err := ti.manifest()
	if err != nil {
		return nil, err
	}
	raw, err := jsonx.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	if _, err := sandbox.ParseManifest(raw); err != nil {
		return nil, err
	}
	hash, err := protocol.ManifestHash(raw)
	if err != nil {
		return nil, err
	}
	reg, err := jsonx.MarshalIndent(protocol.ToolRegistration{Name: ti.name, Description: ti.name + ": describe what it does",
		InputSchema: jsontext.Value(`{"type":"object"}`), Manifest: raw}, "", "  ")
	if err != nil {
		return nil, err
	}
	dir := ti.dir
	if dir == "" {
		dir = ti.name
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	allow := filepath.Join(dir, toolInitAllowlist)
	f := &toolInitFiles{Manifest: filepath.Join(allow, ti.name+".json"), Allowlist: allow,
		Registration: filepath.Join(dir, toolInitRegistration), Hash: hash}
	for _, p := range []string{f.Manifest, f.Registration} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s exists: writ tool init never replaces a file (remove it, or choose another --dir)", p)
		}
	}
	// The allowlist folder must not be writable by others: an agent refuses it.
	if err := os.MkdirAll(allow, 0o755); err != nil {
		return nil, err
	}
	if err := secretfile.CreateMode(f.Manifest, raw, 0o644); err != nil {
		return nil, err
	}
	if err := secretfile.CreateMode(f.Registration, append(reg, '\n'), 0o644); err != nil {
		os.Remove(f.Manifest)
		return nil, err
	}
	f.Next = ti.next(f)
	return f, nil
}

// manifest is the tool's manifest with every limit spelled out (the
// defaults), so that the user sees what to edit.
func (ti toolInit) manifest() (sandbox.Manifest, error) {
	m := sandbox.Manifest{Name: ti.name, Tier: ti.tier}
	if err := (sandbox.Manifest{Name: ti.name, Tier: sandbox.TierWasm, Module: "/m"}).Validate(); err != nil {
		return m, fmt.Errorf("tool name %q: want 1-64 of a-z 0-9 . _ -, starting with a letter or digit", ti.name)
	}
	if !slices.Contains(toolInitTiers, ti.tier) {
		return m, fmt.Errorf("--tier %q: want wasm, bwrap, process, runc or gvisor", ti.tier)
	}
	if ti.tier == sandbox.TierWasm {
		if ti.command != "" || ti.module == "" {
			return m, errors.New("the wasm tier runs a module: give --module FILE (and no --command)")
		}
		p, err := existingFile("--module", ti.module, false)
		if err != nil {
			return m, err
		}
		m.Module = p
	} else {
		if ti.module != "" || ti.command == "" {
			return m, fmt.Errorf("the %s tier runs a command: give --command PATH (and no --module)", ti.tier)
		}
		p, err := existingFile("--command", ti.command, true)
		if err != nil {
			return m, err
		}
		m.Command = &sandbox.Command{Path: p, Args: []string{}}
		if ti.tier != sandbox.TierProcess {
			for _, d := range toolInitReadOnly {
				if st, err := os.Lstat(d); err == nil && st.IsDir() {
					m.ReadOnly = append(m.ReadOnly, d)
				}
			}
		}
	}
	return m.WithDefaults(), nil
}

// existingFile is path made absolute, once it names a regular file (an
// executable one when exec is set).
func existingFile(flag, path string, exec bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s %q: %v", flag, path, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %q: %v", flag, path, err)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%s %q is not a regular file", flag, path)
	case exec && st.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s %q is not executable", flag, path)
	}
	return abs, nil
}

// next is the commands that run the tool under writ dev, in order.
func (ti toolInit) next(f *toolInitFiles) []string {
	data, err := filepath.Abs("writ-dev")
	if err != nil {
		data = "writ-dev"
	}
	key := "dev-orchestrator=" + filepath.Join(data, "orchestrator.key")
	return []string{
		"writ dev --data-dir " + data + " --allowlist " + f.Allowlist,
		"# then, in a shell with the export lines writ dev prints:",
		"writ tool apply -f " + f.Registration,
		"writ intent sign --key " + key + " --tenant dev --principal me --run run-1 --tool " + ti.name + " --params '{}' > intent.json",
		"writ intent submit --wait 30s < intent.json",
		"writ -o text intent get --intent intent.json --key " + key,
		"# on another node: copy " + f.Manifest + " into its agent's --tools-dir and restart the agent",
	}
}
