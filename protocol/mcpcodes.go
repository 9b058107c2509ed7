package protocol

// Codes of `writ mcp`, the MCP server in front of the API: an HTTP request
// without the right bearer token, or from a browser page of another origin;
// a tool call whose intent still awaits approval when the bounded wait ends
// (the intent goes on; writ_intent_status answers later); a control plane
// that could not be reached. A tool call the client cancelled answers
// CodeCanceled, as its intent does.
const (
	CodeMCPUnauthorized     Code = "unauthorized"
	CodeMCPForbiddenOrigin  Code = "forbidden_origin"
	CodeMCPAwaitingApproval Code = "awaiting_approval"
	CodeMCPUnavailable      Code = "unavailable"
)
