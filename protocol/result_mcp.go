package protocol

import "regexp"

// ResultMCP names what a run of the mcp tier called: an optional member of
// a Result ("mcp"), absent for every other tier.
type ResultMCP struct {
	// Tool is the MCP tool name.
	Tool string `json:"tool"`
	// Server is the stdio server's executable digest ("sha256:"+hex, the
	// same as attest.exec_digest) or the HTTP server's URL.
	Server string `json:"server"`
	// InnerTier is the tier the stdio server ran in; absent for an HTTP
	// server.
	InnerTier string `json:"inner_tier,omitzero"`
}

// MaxMCPServerLen bounds ResultMCP.Server, in characters.
const MaxMCPServerLen = 2048

var mcpTool = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,128}$`)

// validateMCP checks the optional mcp member.
func (r *Result) validateMCP() error {
	x := r.MCP
	if x == nil {
		return nil
	}
	switch {
	case !mcpTool.MatchString(x.Tool):
		return malformed("mcp.tool must be 1-128 of A-Z a-z 0-9 _ . / -")
	case !validName(x.Server, MaxMCPServerLen):
		return malformed("mcp.server must be 1-%d characters without control characters", MaxMCPServerLen)
	case x.InnerTier != "" && !validName(x.InnerTier, 16):
		return malformed("mcp.inner_tier must be a tier name")
	}
	return nil
}
