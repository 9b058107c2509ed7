package protocol

// Codes of `writ mcp`, the MCP server in front of the API: an HTTP request
// without the right bearer token, or from a browser page of another origin;
// a tool call whose intent still awaits approval when the bounded wait ends
// (the intent goes on; writ_intent_status answers later); a tool call the
// client cancelled before it reached a final state; a control plane that
// could not be reached.
const (
	CodeMCPUnauthorized     Code = "unauthorized"
	CodeMCPForbiddenOrigin  Code = "forbidden_origin"
	CodeMCPAwaitingApproval Code = "awaiting_approval"
	CodeMCPCanceled         Code = "canceled"
	CodeMCPUnavailable      Code = "unavailable"
)
