// Package mcptier is the mcp tier: a tool that is one tool of an MCP server.
// A stdio server runs as the tool of an inner tier (bwrap, runc, gvisor,
// process) with the manifest's grants and allowlist, and the driver speaks
// MCP over its stdin and stdout; a streamable HTTP server is reached
// through the egress proxy's allowlist. Either way one run is one
// tools/call, whose result content is the run's output. It lives beside
// the agent, not in sandbox/, because it links the MCP SDK; the sandbox
// package knows the tier's manifests and the Conversing drivers it uses.
package mcptier
