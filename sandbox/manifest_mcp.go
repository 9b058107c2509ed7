package sandbox

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/writhq/writ/sandbox/internal/argv"
)

// TierMCP is the tier of a tool that is one tool of an MCP server: a
// stdio server the agent starts in an inner tier, or a streamable HTTP
// server it reaches through the egress proxy (docs/sandboxes.md).
const TierMCP = "mcp"

// MCPInnerTiers are the tiers a stdio MCP server may run in: those that
// can hold a conversation with their tool (Conversing).
var MCPInnerTiers = []string{TierGvisor, TierRunc, TierBwrap, TierProcess}

// MCP names the MCP server and the tool of it that a manifest of tier mcp
// calls. Exactly one of InnerTier (a stdio server: the manifest's command,
// run in that tier with the manifest's grants and allowlist) and URL (a
// streamable HTTP endpoint, whose host and port the manifest's network
// allowlist must hold) is set.
type MCP struct {
	// Tool is the MCP tool name, as the server's tools/list gives it.
	Tool string `json:"tool"`
	// InnerTier is the tier the stdio server runs in.
	InnerTier string `json:"inner_tier,omitempty"`
	// URL is the streamable HTTP endpoint (http or https).
	URL string `json:"url,omitempty"`
}

// mcpToolName is what the MCP specification suggests for tool names.
var mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,128}$`)

// maxMCPURL bounds an MCP endpoint's URL.
const maxMCPURL = 2048

// validateMCP checks the mcp member of a manifest of tier mcp; the command
// and grants are then checked as the inner tier's (Inner).
func (m Manifest) validateMCP() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidManifest, fmt.Sprintf(format, a...))
	}
	x := m.MCP
	if x == nil {
		return bad("mcp tier needs an mcp member")
	}
	if !mcpToolName.MatchString(x.Tool) {
		return bad("mcp.tool %q: want 1-128 of [A-Za-z0-9_./-]", x.Tool)
	}
	if m.Module != "" {
		return bad("mcp tier takes no module")
	}
	switch {
	case x.InnerTier != "" && x.URL != "":
		return bad("mcp: inner_tier (stdio) and url (HTTP) exclude each other")
	case x.InnerTier != "":
		if !slices.Contains(MCPInnerTiers, x.InnerTier) {
			return bad("mcp.inner_tier %q: want gvisor, runc, bwrap or process", x.InnerTier)
		}
		if m.Command == nil {
			return bad("a stdio mcp server needs command")
		}
		for i, a := range m.Command.Args {
			segs, err := argv.Parse(a)
			if err != nil {
				return bad("command.args[%d]: %v", i, err)
			}
			for _, s := range segs {
				if s.Param != "" {
					return bad("command.args[%d]: an mcp server's argv has no placeholders (parameters are the call's arguments)", i)
				}
			}
		}
		return m.Inner().Validate()
	case x.URL != "":
		if m.Command != nil || len(m.ReadOnly) > 0 || len(m.Env) > 0 {
			return bad("an HTTP mcp server takes no command, read_only or env")
		}
		host, port, err := MCPEndpoint(x.URL)
		if err != nil {
			return bad("mcp.url: %v", err)
		}
		for _, d := range m.Network {
			if d.Host == host && d.Port == port {
				return nil
			}
		}
		return bad("mcp.url: %s:%d is not in the network allowlist", host, port)
	}
	return bad("mcp needs inner_tier (a stdio server) or url (an HTTP server)")
}

// Inner is the manifest of the stdio MCP server of an mcp manifest: the
// same command, grants and limits, in the inner tier.
func (m Manifest) Inner() Manifest {
	in := m
	in.MCP = nil
	if m.MCP != nil {
		in.Tier = m.MCP.InnerTier
	}
	return in
}

// MCPEndpoint checks an MCP server's URL (absolute http or https, a host,
// no user information or fragment) and returns its host and port.
func MCPEndpoint(raw string) (string, int, error) {
	if len(raw) > maxMCPURL {
		return "", 0, fmt.Errorf("longer than %d bytes", maxMCPURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", 0, err
	}
	def := 0
	switch u.Scheme {
	case "http":
		def = 80
	case "https":
		def = 443
	default:
		return "", 0, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil || u.Fragment != "" || u.Opaque != "" || u.Hostname() == "" {
		return "", 0, fmt.Errorf("%q: want scheme://host[:port]/path without user or fragment", raw)
	}
	port := def
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("port %q", p)
		}
		port = n
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip == nil && (!hostName.MatchString(host) || strings.Contains(host, "*")) {
		return "", 0, fmt.Errorf("host %q", host)
	}
	return host, port, nil
}
