// Package tools reads tool registrations: what the control plane knows of a
// tool (its input schema, capabilities, whether it needs approval, where it may
// run) around the sandbox manifest that node agents run, and validates params
// against the schema.
package tools

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/writhq/writ/protocol"
)

// Spec is a tool registration, as `writ tool apply -f` sends it.
type Spec struct {
	Name             string         `json:"name"`
	Description      string         `json:"description,omitzero"`
	InputSchema      jsontext.Value `json:"input_schema"`
	Capabilities     []string       `json:"capabilities,omitzero"`
	RequiresApproval bool           `json:"requires_approval,omitzero"`
	// ApprovalsRequired asks for that many distinct approvers (2 to 10;
	// 1 is requires_approval).
	ApprovalsRequired int               `json:"approvals_required,omitzero"`
	NodeSelector      map[string]string `json:"node_selector,omitzero"`
	// Manifest is the sandbox manifest node agents run (docs/tools.md). The
	// control plane does not interpret it beyond its name and tier; its hash
	// identifies the tool to agents.
	Manifest jsontext.Value `json:"manifest"`
}

// The sandbox's default wall-clock limit, and the longest a tool may ask for.
const (
	defaultTimeoutMS = 30_000
	maxTimeoutMS     = 24 * 3600 * 1000
)

// MaxApprovals bounds approvals_required.
const MaxApprovals = 10

// Errors of Parse.
var ErrInvalid = errors.New("tools: invalid tool registration")

// Tool is a parsed registration with its compiled schema.
type Tool struct {
	Spec
	// Hash is the hash of the canonical manifest: what dispatches name and
	// agents compare against their allowlist.
	Hash string
	// Tier is the manifest's sandbox tier.
	Tier string
	// TimeoutMS is the manifest's wall-clock limit (the sandbox default of
	// 30 s when it sets none): how long a node may run it.
	TimeoutMS int64
	schema    *jsonschema.Schema
}

// Parse reads a registration strictly and compiles its input schema.
func Parse(data []byte) (*Tool, error) {
	var s Spec
	if err := json.Unmarshal(data, &s, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if s.ApprovalsRequired < 0 || s.ApprovalsRequired > MaxApprovals {
		return nil, fmt.Errorf("%w: approvals_required must be between 0 and %d", ErrInvalid, MaxApprovals)
	}
	if !validName(s.Name) {
		return nil, fmt.Errorf("%w: name %q must be 1-64 of a-z 0-9 . _ -, starting with a letter or digit", ErrInvalid, s.Name)
	}
	if s.Manifest.Kind() != '{' {
		return nil, fmt.Errorf("%w: manifest must be an object", ErrInvalid)
	}
	var m struct {
		Name   string `json:"name"`
		Tier   string `json:"tier"`
		Limits struct {
			TimeoutMS int64 `json:"timeout_ms"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(s.Manifest, &m); err != nil || m.Name != s.Name {
		return nil, fmt.Errorf("%w: the manifest's name must be %q", ErrInvalid, s.Name)
	}
	switch m.Tier {
	case "wasm", "gvisor", "bwrap", "runc", "process", "mcp":
	default:
		return nil, fmt.Errorf("%w: manifest tier %q is not wasm, gvisor, bwrap, runc, process or mcp", ErrInvalid, m.Tier)
	}
	canon, err := protocol.Canonicalize(s.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrInvalid, err)
	}
	s.Manifest = canon
	hash, err := protocol.ManifestHash(canon)
	if err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrInvalid, err)
	}
	if s.InputSchema == nil {
		s.InputSchema = jsontext.Value(`{"type":"object"}`)
	}
	sch, err := compile(s.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: input_schema: %v", ErrInvalid, err)
	}
	timeout := m.Limits.TimeoutMS
	if timeout < 0 || timeout > maxTimeoutMS {
		return nil, fmt.Errorf("%w: manifest limits.timeout_ms must be between 0 and %d", ErrInvalid, maxTimeoutMS)
	}
	if timeout == 0 {
		timeout = defaultTimeoutMS
	}
	return &Tool{Spec: s, Hash: hash, Tier: m.Tier, TimeoutMS: timeout, schema: sch}, nil
}

func compile(schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	// Schemas are data from an admin, not a way to read the server's files or
	// reach the network: every external $ref is refused.
	c.UseLoader(refuseLoader{})
	if err := c.AddResource("writ:tool-schema", doc); err != nil {
		return nil, err
	}
	return c.Compile("writ:tool-schema")
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %q is not allowed", url)
}

// Validate checks params (a JSON object) against the tool's input schema, and
// returns a message safe to show the orchestrator when they do not conform.
func (t *Tool) Validate(params []byte) error {
	v, err := instance(params)
	if err != nil {
		return err
	}
	if err := t.schema.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(schemaFailure(ve))
		}
		return err
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (i > 0 && (c == '.' || c == '_' || c == '-'))
		if !ok {
			return false
		}
	}
	return true
}

// NeedsApproval reports whether the registration asks for approval, by one
// approver or several.
func (t *Tool) NeedsApproval() bool { return t.RequiresApproval || t.ApprovalsRequired > 0 }
