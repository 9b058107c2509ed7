package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/writhq/writ/internal/jsonx"
	"github.com/writhq/writ/internal/secretfile"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
	"github.com/writhq/writ/sandbox/tiers"
)

// toolImport is what `writ tool import-mcp` is asked for.
type toolImport struct {
	command, innerTier, url, prefix, dir string
	args, allow, readOnly                []string
	requiresApproval, register           bool
	timeout                              time.Duration
}

// toolImported is one tool `writ tool import-mcp` wrote.
type toolImported struct {
	Name         string `json:"name"`
	MCPTool      string `json:"mcp_tool"`
	Manifest     string `json:"manifest"`
	Registration string `json:"registration"`
	Hash         string `json:"hash"`
	Registered   bool   `json:"registered"`
}

// toolImportReport is what `writ tool import-mcp` did.
type toolImportReport struct {
	Server    string         `json:"server"`
	Allowlist string         `json:"allowlist"`
	Tools     []toolImported `json:"tools"`
}

// The files `writ tool import-mcp` writes beside the allowlist folder.
const toolImportRegistrations = "registrations"

// maxImportDescription bounds a tool description copied from a server.
const maxImportDescription = 1024

func newToolImportMCP(e *env, a *adminFlags) *cobra.Command {
	ti := toolImport{innerTier: sandbox.TierBwrap, timeout: 30 * time.Second}
	cmd := &cobra.Command{
		Use:   "import-mcp --prefix P (--command PATH [--arg A]... [--inner-tier T] | --url URL) [--dir DIR] [--register]",
		Short: "Register every tool of an MCP server as a tool of tier mcp, and print the allowlist entries",
		Long: `Ask an MCP server for its tools (tools/list) and write, for each tool T, into DIR
(default ./PREFIX):
  DIR/allowlist/PREFIX.T.json       the manifest of tier mcp that calls T: the node
                                    owner's allowlist entry (an agent's --tools-dir,
                                    or writ dev --allowlist DIR/allowlist)
  DIR/registrations/PREFIX.T.json   the registration: T's description and input
                                    schema copied, the same manifest (its hash pinned)
With --register each registration is also sent (as writ tool apply -f does, with
--server and the admin token). A stdio server (--command) is started for the listing
in the sandbox tier it will run in (--inner-tier, default bwrap) with the manifest's
grants, here, and stopped; an HTTP server (--url) is reached through the egress proxy
with the allowlist --allow HOST:PORT (the URL's own is added). Tool names are PREFIX.
followed by the MCP name in lower case, other characters than a-z 0-9 . _ - as _.
An existing file is never replaced.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			rep, regs, err := ti.write()
			if err != nil {
				return err
			}
			if ti.register {
				for i, r := range regs {
					c, err := a.client(e)
					if err != nil {
						return err
					}
					if err := c.Admin(context.Background(), "PUT", "tools", r); err != nil {
						return e.apiFailure(err)
					}
					rep.Tools[i].Registered = true
				}
			}
			if e.output != "text" {
				return e.printJSON(rep)
			}
			fmt.Fprintf(e.out, "Read %d tools from %s\n", len(rep.Tools), rep.Server)
			for _, t := range rep.Tools {
				state := "written"
				if t.Registered {
					state = "registered"
				}
				fmt.Fprintf(e.out, "  %s (MCP tool %s): %s\n", t.Name, t.MCPTool, state)
			}
			fmt.Fprintf(e.out, "\nFor the node owner, the allowlist entries (copy them into the agent's --tools-dir,\nor run writ dev --allowlist %s):\n", rep.Allowlist)
			for _, t := range rep.Tools {
				fmt.Fprintf(e.out, "  %s  %s\n", t.Manifest, t.Hash)
			}
			if !ti.register {
				fmt.Fprintln(e.out, "\nRegister them with:")
				for _, t := range rep.Tools {
					fmt.Fprintf(e.out, "  writ tool apply -f %s\n", t.Registration)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ti.prefix, "prefix", "", "the prefix of the tools' names (a tool name itself)")
	f.StringVar(&ti.command, "command", "", "the stdio server's executable")
	f.StringArrayVar(&ti.args, "arg", nil, "an argument of the stdio server (repeat, in order)")
	f.StringVar(&ti.innerTier, "inner-tier", ti.innerTier, "the tier the stdio server runs in: bwrap, process, runc or gvisor")
	f.StringVar(&ti.url, "url", "", "the streamable HTTP server's endpoint")
	f.StringArrayVar(&ti.allow, "allow", nil, "a network destination HOST:PORT the server may reach (repeat)")
	f.StringArrayVar(&ti.readOnly, "read-only", nil, "a host folder the stdio server may read (repeat; default /usr /bin /lib /lib64 outside the process tier)")
	f.StringVar(&ti.dir, "dir", "", "the folder to write into (default ./PREFIX)")
	f.BoolVar(&ti.requiresApproval, "requires-approval", false, "mark every tool as needing approval")
	f.BoolVar(&ti.register, "register", false, "also register each tool with the control plane (--server, admin token)")
	f.DurationVar(&ti.timeout, "timeout", ti.timeout, "how long the listing may take")
	cmd.MarkFlagRequired("prefix")
	return cmd
}

// write lists the server's tools, then writes every manifest and
// registration, refusing to replace a file: on an error before the
// writing nothing is written, and a failed write removes what it wrote.
// It returns the registrations for --register.
func (ti toolImport) write() (*toolImportReport, [][]byte, error) {
	base, err := ti.manifest()
	if err != nil {
		return nil, nil, err
	}
	tools, err := ti.list(base)
	if err != nil {
		return nil, nil, err
	}
	if len(tools) == 0 {
		return nil, nil, errors.New("the server lists no tools")
	}
	dir := ti.dir
	if dir == "" {
		dir = ti.prefix
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, nil, err
	}
	rep := &toolImportReport{Server: base.MCP.URL, Allowlist: filepath.Join(dir, toolInitAllowlist)}
	if rep.Server == "" {
		rep.Server = strings.Join(append([]string{base.Command.Path}, base.Command.Args...), " ")
	}
	type file struct {
		path string
		data []byte
	}
	var files []file
	var regs [][]byte
	seen := map[string]string{}
	for _, t := range tools {
		name := importName(ti.prefix, t.Name)
		if other, dup := seen[name]; dup {
			return nil, nil, fmt.Errorf("MCP tools %q and %q both become %q: use another prefix or import them apart", other, t.Name, name)
		}
		seen[name] = t.Name
		m := base
		m.Name, m.MCP = name, &sandbox.MCP{Tool: t.Name, InnerTier: base.MCP.InnerTier, URL: base.MCP.URL}
		raw, err := jsonx.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, nil, err
		}
		raw = append(raw, '\n')
		if _, err := sandbox.ParseManifest(raw); err != nil {
			return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, err)
		}
		hash, err := protocol.ManifestHash(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, err)
		}
		schema, err := jsonx.Marshal(t.InputSchema)
		if err != nil || len(schema) == 0 || schema[0] != '{' {
			schema = []byte(`{"type":"object"}`)
		}
		reg, err := jsonx.MarshalIndent(protocol.ToolRegistration{Name: name, Description: importDescription(t),
			InputSchema: schema, RequiresApproval: ti.requiresApproval, Manifest: raw}, "", "  ")
		if err != nil {
			return nil, nil, err
		}
		reg = append(reg, '\n')
		it := toolImported{Name: name, MCPTool: t.Name, Hash: hash,
			Manifest:     filepath.Join(rep.Allowlist, name+".json"),
			Registration: filepath.Join(dir, toolImportRegistrations, name+".json")}
		files = append(files, file{it.Manifest, raw}, file{it.Registration, reg})
		regs = append(regs, reg)
		rep.Tools = append(rep.Tools, it)
	}
	for _, f := range files {
		if _, err := os.Lstat(f.path); !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s exists: writ tool import-mcp never replaces a file (remove it, or choose another --dir)", f.path)
		}
	}
	for _, d := range []string{rep.Allowlist, filepath.Join(dir, toolImportRegistrations)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	for i, f := range files {
		if err := secretfile.CreateMode(f.path, f.data, 0o644); err != nil {
			for _, w := range files[:i] {
				os.Remove(w.path)
			}
			return nil, nil, err
		}
	}
	return rep, regs, nil
}

// manifest is the manifest every imported tool shares but for its name
// and MCP tool, with every limit spelled out.
func (ti toolImport) manifest() (sandbox.Manifest, error) {
	if err := (sandbox.Manifest{Name: ti.prefix, Tier: sandbox.TierWasm, Module: "/m"}).Validate(); err != nil {
		return sandbox.Manifest{}, fmt.Errorf("--prefix %q: want 1-64 of a-z 0-9 . _ -, starting with a letter or digit", ti.prefix)
	}
	m := sandbox.Manifest{Name: ti.prefix, Tier: sandbox.TierMCP, MCP: &sandbox.MCP{Tool: "tools/list"}}
	for _, a := range ti.allow {
		host, port, err := egress.SplitHostPort(a)
		if err != nil {
			return m, fmt.Errorf("--allow %q: %v", a, err)
		}
		m.Network = append(m.Network, sandbox.Destination{Host: host, Port: port})
	}
	switch {
	case (ti.command == "") == (ti.url == ""):
		return m, errors.New("give --command PATH (a stdio server) or --url URL (an HTTP server)")
	case ti.url != "":
		if len(ti.args) > 0 || len(ti.readOnly) > 0 {
			return m, errors.New("--arg and --read-only are for a stdio server (--command)")
		}
		host, port, err := sandbox.MCPEndpoint(ti.url)
		if err != nil {
			return m, fmt.Errorf("--url: %v", err)
		}
		if !slices.Contains(m.Network, sandbox.Destination{Host: host, Port: port}) {
			m.Network = append(m.Network, sandbox.Destination{Host: host, Port: port})
		}
		m.MCP.URL = ti.url
	default:
		p, err := existingFile("--command", ti.command, true)
		if err != nil {
			return m, err
		}
		m.Command = &sandbox.Command{Path: p, Args: append([]string{}, ti.args...)}
		m.MCP.InnerTier = ti.innerTier
		m.ReadOnly = ti.readOnly
		if m.ReadOnly == nil && ti.innerTier != sandbox.TierProcess {
			for _, d := range toolInitReadOnly {
				if st, err := os.Lstat(d); err == nil && st.IsDir() {
					m.ReadOnly = append(m.ReadOnly, d)
				}
			}
		}
	}
	m = m.WithDefaults()
	if err := m.Validate(); err != nil {
		return m, err
	}
	return m, nil
}

// list runs the server as its tools will run, here, and asks it for its
// tools.
func (ti toolImport) list(m sandbox.Manifest) ([]*sdk.Tool, error) {
	d, err := tierDriver(m, tiers.DefaultConfig())
	if err != nil {
		return nil, err
	}
	md, ok := d.(interface {
		List(context.Context, sandbox.Invocation) ([]*sdk.Tool, error)
	})
	if !ok {
		return nil, errors.New("the mcp tier cannot list tools")
	}
	ws, err := os.MkdirTemp("", "writ-import-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	os.Chmod(ws, 0o777) // the tier's run-as user writes there
	ctx, cancel := context.WithTimeout(context.Background(), ti.timeout)
	defer cancel()
	return md.List(ctx, sandbox.Invocation{Manifest: m, Workspace: ws})
}

// importName is the Writ name of MCP tool name under prefix.
func importName(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix + ".")
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// importDescription is a tool's description (or title), bounded.
func importDescription(t *sdk.Tool) string {
	d := t.Description
	if d == "" {
		d = t.Title
	}
	if len(d) > maxImportDescription {
		d = d[:maxImportDescription]
		for !utf8.ValidString(d) {
			d = d[:len(d)-1]
		}
	}
	return d
}
