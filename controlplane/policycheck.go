package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

// ValidatePolicy checks a policy text as the server does before installing
// it (Cedar syntax, Writ's annotations, and only the attributes and context
// members of Writ's entity model), and returns its hash and policy ids.
func ValidatePolicy(text []byte) (hash string, ids []string, err error) {
	set, err := policy.Parse(text)
	if err != nil {
		return "", nil, err
	}
	return set.Hash(), set.IDs(), nil
}

// PolicyCases is the file `writ policy test --cases` reads: tools as policy
// sees them, and authorization requests with the decision each must get.
type PolicyCases struct {
	Tools map[string]PolicyCaseTool `json:"tools"`
	Cases []PolicyCase              `json:"cases"`
}

// PolicyCaseTool is a tool as policy sees it (resource.*).
type PolicyCaseTool struct {
	Capabilities      []string `json:"capabilities,omitzero"`
	Sandbox           string   `json:"sandbox,omitzero"`
	RequiresApproval  bool     `json:"requires_approval,omitzero"`
	ApprovalsRequired int      `json:"approvals_required,omitzero"`
}

// PolicyCase is one request: an intent's tenant, principal, tool, params and
// context, and the decision expected (allow, deny or approval).
type PolicyCase struct {
	Name      string           `json:"name"`
	Tenant    string           `json:"tenant"`
	Principal string           `json:"principal"`
	Tool      string           `json:"tool"`
	RunID     string           `json:"run_id,omitzero"`
	Params    jsontext.Value   `json:"params,omitzero"`
	Context   jsontext.Value   `json:"context,omitzero"`
	Target    *protocol.Target `json:"target,omitzero"`
	Expect    string           `json:"expect"`
}

// PolicyCaseResult is a case's outcome.
type PolicyCaseResult struct {
	Name     string   `json:"name"`
	Expect   string   `json:"expect"`
	Got      string   `json:"got"`
	Pass     bool     `json:"pass"`
	Policies []string `json:"policies"`
	Errors   []string `json:"errors,omitzero"`
}

// ParsePolicyCases reads a cases file strictly: unknown members, a case
// without a name, tenant, principal or tool, an unknown tool, or an expected
// decision other than allow, deny or approval are refused.
func ParsePolicyCases(b []byte) (*PolicyCases, error) {
	var c PolicyCases
	if err := json.UnmarshalRead(bytes.NewReader(b), &c, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("cases: %w", err)
	}
	if len(c.Cases) == 0 {
		return nil, errors.New("cases: no cases")
	}
	for i, k := range c.Cases {
		switch {
		case k.Name == "" || k.Tenant == "" || k.Principal == "" || k.Tool == "":
			return nil, fmt.Errorf("cases: case %d needs a name, tenant, principal and tool", i)
		case !validExpect(k.Expect):
			return nil, fmt.Errorf("cases: %q expects %q: give allow, deny, approval or approval:N (N from 2 to 10)", k.Name, k.Expect)
		}
		if _, ok := c.Tools[k.Tool]; !ok {
			return nil, fmt.Errorf("cases: %q names tool %q, which \"tools\" does not describe", k.Name, k.Tool)
		}
	}
	return &c, nil
}

// TestPolicy decides every case with the policy text, as admission would
// (the tool's requires_approval ORed in), and reports each.
func TestPolicy(text []byte, cases *PolicyCases) ([]PolicyCaseResult, error) {
	set, err := policy.Parse(text)
	if err != nil {
		return nil, err
	}
	out := make([]PolicyCaseResult, 0, len(cases.Cases))
	for i, k := range cases.Cases {
		t := cases.Tools[k.Tool]
		params := k.Params
		if len(params) == 0 {
			params = jsontext.Value(`{}`)
		}
		in := &protocol.Intent{ID: fmt.Sprintf("case-%d", i), Tenant: k.Tenant, Principal: k.Principal, RunID: k.RunID,
			Tool: k.Tool, Params: params, Context: k.Context, Target: k.Target}
		r := PolicyCaseResult{Name: k.Name, Expect: k.Expect, Got: protocol.DecisionDeny, Policies: []string{}}
		needs := t.RequiresApproval || t.ApprovalsRequired > 0
		req, err := policy.NewInvokeRequest(in, policy.Tool{Name: k.Tool, Capabilities: t.Capabilities, Sandbox: t.Sandbox, RequiresApproval: needs})
		if err != nil {
			r.Errors = []string{err.Error()}
		} else {
			d := set.Invoke(req)
			approval := d.Allow && (d.ApprovalRequired || needs)
			n := 0
			if approval {
				n = max(d.Approvers, t.ApprovalsRequired)
			}
			r.Got = decisionName(d.Allow, approval, n)
			r.Policies, r.Errors = d.Policies, d.Errors
		}
		r.Pass = r.Got == r.Expect
		out = append(out, r)
	}
	return out, nil
}

func validExpect(e string) bool {
	if slices.Contains([]string{protocol.DecisionAllow, protocol.DecisionDeny, protocol.DecisionApproval}, e) {
		return true
	}
	n, ok := strings.CutPrefix(e, protocol.DecisionApproval+":")
	v, err := strconv.Atoi(n)
	return ok && err == nil && v >= 2 && v <= 10 && strconv.Itoa(v) == n
}
