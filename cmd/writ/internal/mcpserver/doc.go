// Package mcpserver is `writ mcp`: a Model Context Protocol server in front
// of a Writ control plane, so that any MCP host (a desktop assistant, an
// agent framework) reaches Writ's tools with each call signed as an intent,
// authorized, approved where policy says, sandboxed and receipted.
package mcpserver
