package controlplane

import (
	"net/http"
	"strconv"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/protocol"
)

func (ep adminAPI) handleGetPolicy(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	cur := ep.srv.reads.Policy()
	v := protocol.PolicyView{Hash: cur.Hash, Text: cur.Text}
	if vs := ep.srv.reads.PolicyVersions(); len(vs) > 0 && vs[len(vs)-1].Hash == cur.Hash {
		last := vs[len(vs)-1]
		v.Version, v.InstalledAt, v.RollbackOf = last.Version, last.InstalledAt, last.RollbackOf
	}
	return v, nil
}

func (ep adminAPI) handlePolicyVersions(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	vs := ep.srv.reads.PolicyVersions()
	out := protocol.PolicyVersions{Versions: make([]protocol.PolicyVersionSummary, 0, len(vs))}
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		out.Versions = append(out.Versions, protocol.PolicyVersionSummary{Version: v.Version, Hash: v.Hash, Bytes: len(v.Text),
			InstalledAt: v.InstalledAt, RollbackOf: v.RollbackOf, Current: i == len(vs)-1})
	}
	return out, nil
}

// handlePolicyRollback reinstalls a kept version's text as a new version,
// checked as any policy is before it is applied.
func (ep adminAPI) handlePolicyRollback(w http.ResponseWriter, r *http.Request) *apiError {
	var req protocol.PolicyRollback
	if aerr := decodeAdmin(w, r, &req); aerr != nil {
		return aerr
	}
	v, ok := ep.srv.reads.PolicyVersion(req.Version)
	if !ok {
		return refusal(protocol.CodeNotFound, "no such policy version is kept (writ policy history lists them)")
	}
	set, err := policy.Parse([]byte(v.Text))
	if err != nil {
		return refusal(protocol.CodeMalformed, "that version no longer passes validation: "+err.Error())
	}
	return ep.srv.adminApply(r.Context(), fsm.MsgPutPolicy, fsm.PutPolicy{Text: v.Text, Hash: set.Hash(), At: ep.srv.now(), RollbackOf: v.Version})
}

// handlePolicyDryRun replays the authorization of the newest intents
// admitted since the given time against a candidate policy set, with the
// tools as registered now, and lists the decisions that would change.
func (ep adminAPI) handlePolicyDryRun(w http.ResponseWriter, r *http.Request) (any, *apiError) {
	var req protocol.PolicyDryRun
	if aerr := decodeAdmin(w, r, &req); aerr != nil {
		return nil, aerr
	}
	set, err := policy.Parse([]byte(req.Text))
	if err != nil {
		return nil, refusal(protocol.CodeMalformed, err.Error())
	}
	out := protocol.PolicyDryRunResult{Hash: set.Hash(), Since: req.Since, Changes: []protocol.PolicyChange{}}
	for _, in := range ep.srv.reads.DecidedSince(req.Since, protocol.MaxPolicyReplay) {
		if r.Context().Err() != nil {
			return nil, refusal(protocol.CodeInternal, "the dry run was interrupted")
		}
		// Replayed with the tool as registered now: an intent whose params
		// no longer fit its schema would not reach the policy today.
		tool, ok := ep.srv.catalog.tool(in.Tool)
		intent, err := protocol.DecodeIntent(in.Raw, 0)
		if !ok || err != nil || tool.Validate(intent.Params) != nil {
			out.Skipped++
			continue
		}
		out.Examined++
		after := protocol.DecisionDeny
		var d policy.Decision
		if req, err := policy.NewInvokeRequest(intent, policyTool(tool)); err == nil {
			d = set.Invoke(req)
			approval := d.Allow && (d.ApprovalRequired || tool.NeedsApproval())
			n := 0
			if approval {
				n = max(d.Approvers, tool.ApprovalsRequired)
			}
			after = decisionName(d.Allow, approval, n)
		}
		before := decisionName(in.Decision.Allow, in.Decision.ApprovalRequired, in.Decision.Approvals)
		if before == after {
			continue
		}
		out.Changed++
		if len(out.Changes) == protocol.MaxPolicyChanges {
			out.Truncated = true
			continue
		}
		pol := d.Policies
		if pol == nil {
			pol = []string{}
		}
		out.Changes = append(out.Changes, protocol.PolicyChange{IntentID: in.ID, Tenant: in.Tenant, Principal: in.Principal,
			Tool: in.Tool, AdmittedAt: in.AdmittedAt, Before: before, After: after, Policies: pol})
	}
	return out, nil
}

// decisionName is how a dry run and a policy test name a decision: deny,
// allow, approval, or approval:N for N distinct approvers.
func decisionName(allow, approval bool, approvers int) string {
	switch {
	case !allow:
		return protocol.DecisionDeny
	case approval && approvers > 1:
		return protocol.DecisionApproval + ":" + strconv.Itoa(approvers)
	case approval:
		return protocol.DecisionApproval
	}
	return protocol.DecisionAllow
}
