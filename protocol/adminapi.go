package protocol

import (
	"github.com/go-json-experiment/json/jsontext"
)

// The bodies of the admin API's tenants and keys, and of the tool catalog.

// TenantRequest is the body of PUT /v1/admin/tenants/{tenant}: the runs
// the tenant may start (0: no limit).
type TenantRequest struct {
	RunBudget int64 `json:"run_budget"`
}

// IntentKeyRequest is the body of PUT /v1/admin/tenants/{tenant}/keys/{key}:
// the orchestrator's HMAC secret, standard base64.
type IntentKeyRequest struct {
	Secret string `json:"secret"`
}

// ApproverKeyRequest is the body of PUT
// /v1/admin/tenants/{tenant}/approvers/{key}: the approver's Ed25519 public
// key, standard base64, and the identity it signs as.
type ApproverKeyRequest struct {
	Public   string `json:"public"`
	Approver string `json:"approver"`
}

// ToolRegistration is the body of PUT /v1/admin/tools/{name} as `writ tool
// init` and `writ tool import-mcp` write it: the tool's name, what it does,
// the JSON Schema of its params, whether each call needs approval, and its
// manifest.
type ToolRegistration struct {
	Name             string         `json:"name"`
	Description      string         `json:"description,omitempty"`
	InputSchema      jsontext.Value `json:"input_schema"`
	RequiresApproval bool           `json:"requires_approval"`
	Manifest         jsontext.Value `json:"manifest"`
}

// ToolView is one registered tool as GET /v1/tools shows it: the catalog
// every caller may read, not a tenant's data.
type ToolView struct {
	Name             string         `json:"name"`
	Description      string         `json:"description,omitempty"`
	InputSchema      jsontext.Value `json:"input_schema"`
	Sandbox          string         `json:"sandbox"`
	Capabilities     []string       `json:"capabilities"`
	RequiresApproval bool           `json:"requires_approval"`
	ManifestHash     string         `json:"manifest_hash"`
}

// ToolList answers GET /v1/tools.
type ToolList struct {
	Tools []ToolView `json:"tools"`
}
