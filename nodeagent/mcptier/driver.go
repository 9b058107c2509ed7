package mcptier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/writhq/writ/sandbox"
	"github.com/writhq/writ/sandbox/egress"
)

// Driver runs tools of tier mcp.
type Driver struct {
	cfg   Config
	proxy *egress.Proxy
}

var _ sandbox.Driver = (*Driver)(nil)

// New returns the mcp tier's Driver.
func New(cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	proxy, err := egress.New(cfg.Egress)
	if err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, proxy: proxy}, nil
}

// Name returns "mcp".
func (d *Driver) Name() string { return sandbox.TierMCP }

// Available reports whether at least one inner tier can run stdio servers
// (an HTTP server needs none, but a node without any sandbox for MCP
// servers does not offer the tier). A manifest whose inner tier is not
// available is refused by Run.
func (d *Driver) Available() error {
	var why []string
	for _, name := range sandbox.MCPInnerTiers {
		in, ok := d.cfg.Inner[name]
		if !ok {
			continue
		}
		if _, ok := in.(sandbox.Conversing); !ok {
			why = append(why, name+" cannot talk to its tool")
			continue
		}
		if err := in.Available(); err != nil {
			why = append(why, err.Error())
			continue
		}
		return nil
	}
	if len(why) == 0 {
		why = append(why, "no inner tier configured")
	}
	return fmt.Errorf("%w: no tier can run an MCP server here: %s", sandbox.ErrUnavailable, strings.Join(why, "; "))
}

// Run implements sandbox.Driver: one tools/call of the manifest's server.
func (d *Driver) Run(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	m, err := sandbox.Preflight(d, inv)
	if err != nil {
		return sandbox.Refuse(d.Name(), err)
	}
	args, err := sandbox.ParseParams(inv.Params)
	if err != nil {
		return sandbox.Refuse(d.Name(), err)
	}
	var c call
	out, err := d.converse(ctx, m, inv, func(ctx context.Context, t sdk.Transport) {
		c = d.call(ctx, t, m.MCP.Tool, args)
	})
	if err != nil {
		return out, err
	}
	info := &sandbox.MCPCall{Tool: m.MCP.Tool, Server: m.MCP.URL}
	if m.MCP.URL == "" {
		info.Server, info.InnerTier = out.ExecDigest, m.MCP.InnerTier
	}
	return finish(out, c, m, info), nil
}

// converse starts the manifest's server (a stdio server in its inner
// tier; an HTTP server needs no start) and calls talk with a transport to
// it, then stops the server. The outcome is the server's run; a refusal
// is the mcp tier's.
func (d *Driver) converse(ctx context.Context, m sandbox.Manifest, inv sandbox.Invocation, talk func(context.Context, sdk.Transport)) (sandbox.Outcome, error) {
	if m.MCP.URL != "" {
		return d.reach(ctx, m, talk)
	}
	in, ok := d.cfg.Inner[m.MCP.InnerTier].(sandbox.Conversing)
	if !ok {
		return sandbox.Refuse(d.Name(), fmt.Errorf("%w: the %s tier cannot run MCP servers on this node", sandbox.ErrUnavailable, m.MCP.InnerTier))
	}
	if err := in.Available(); err != nil {
		return sandbox.Refuse(d.Name(), err)
	}
	inner := inv
	inner.Manifest = m.Inner()
	out, err := in.RunTalk(ctx, inner, func(ctx context.Context, stdin io.WriteCloser, stdout io.ReadCloser) {
		talk(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin})
	})
	if errors.Is(err, sandbox.ErrRefused) {
		return sandbox.Refuse(d.Name(), err)
	}
	return out, err
}

// List asks the manifest's server for its tools (tools/list, every page),
// starting a stdio server in its inner tier as Run does: `writ tool
// import-mcp` reads a server so. The manifest's mcp.tool is not called.
// An error says why there is no list, with what the server wrote on
// stderr.
//
// Unlike Run it needs no inner tier for an HTTP server: a host that runs
// no sandbox can still read one.
func (d *Driver) List(ctx context.Context, inv sandbox.Invocation) ([]*sdk.Tool, error) {
	m := inv.Manifest.WithDefaults()
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.Tier != d.Name() {
		return nil, fmt.Errorf("%w: manifest is for the %s tier", sandbox.ErrInvalidManifest, m.Tier)
	}
	var (
		tools []*sdk.Tool
		lerr  error
	)
	out, err := d.converse(ctx, m, inv, func(ctx context.Context, t sdk.Transport) {
		tools, lerr = d.list(ctx, t)
	})
	if err != nil {
		return nil, err
	}
	if lerr != nil {
		if len(out.Stderr) > 0 {
			lerr = fmt.Errorf("%w (server's stderr: %s)", lerr, clip(string(out.Stderr)))
		}
		return nil, lerr
	}
	return tools, nil
}
