package mcp

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
	if m.MCP.URL != "" {
		return d.runHTTP(ctx, m, args)
	}
	in, ok := d.cfg.Inner[m.MCP.InnerTier].(sandbox.Conversing)
	if !ok {
		return sandbox.Refuse(d.Name(), fmt.Errorf("%w: the %s tier cannot run MCP servers on this node", sandbox.ErrUnavailable, m.MCP.InnerTier))
	}
	if err := in.Available(); err != nil {
		return sandbox.Refuse(d.Name(), err)
	}
	var c call
	talk := func(ctx context.Context, stdin io.WriteCloser, stdout io.ReadCloser) {
		c = d.call(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, m.MCP.Tool, args)
	}
	inner := inv
	inner.Manifest = m.Inner()
	out, err := in.RunTalk(ctx, inner, talk)
	if err != nil {
		if errors.Is(err, sandbox.ErrRefused) {
			return sandbox.Refuse(d.Name(), err)
		}
		return out, err
	}
	return finish(out, c, m, &sandbox.MCPCall{Tool: m.MCP.Tool, Server: out.ExecDigest, InnerTier: m.MCP.InnerTier}), nil
}
