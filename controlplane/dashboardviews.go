package controlplane

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/raft"
	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/web"
)

// The dashboard's reads: views of the FSM, the ledger and Raft.

func (b dashBackend) Overview() web.Overview {
	s := b.s
	addr, leader := s.node.Raft.LeaderWithID()
	o := web.Overview{Server: s.cfg.ID, Leader: string(leader), RaftIndex: s.reads.Index(), Nodes: map[string]int{}}
	if f := s.node.Raft.GetConfiguration(); f.Error() == nil {
		for _, sv := range f.Configuration().Servers {
			o.Servers = append(o.Servers, web.ServerInfo{ID: string(sv.ID), Address: string(sv.Address),
				Voter: sv.Suffrage == raft.Voter, Leader: sv.ID == leader || (leader == "" && sv.Address == addr && addr != "")})
		}
	}
	for _, n := range s.reads.Nodes() {
		o.Nodes[n.Status]++
	}
	now := s.now().Truncate(time.Minute)
	per := s.reads.StatesPerMinute(now.Add(-14 * time.Minute))
	for m := now.Add(-14 * time.Minute); !m.After(now); m = m.Add(time.Minute) {
		if st := per[m]; len(st) > 0 {
			o.Minutes = append(o.Minutes, web.Minute{Start: m, States: st})
		}
	}
	o.Pending = s.reads.PendingApprovals()
	if cp, ok := b.Checkpoint(); ok {
		o.Checkpoint = &cp
	}
	return o
}

// The cursor of the intents list is "<unix nanoseconds>.<intent id>".
func (b dashBackend) Intents(q web.IntentQuery) web.IntentPage {
	limit := q.Limit
	if limit <= 0 || limit > 200 {
		limit = 200
	}
	f := fsm.IntentFilter{Tenant: q.Tenant, Tool: q.Tool, Principal: q.Principal, State: q.State, Since: q.Since, Until: q.Until, Limit: limit}
	if ns, id, ok := strings.Cut(q.Before, "."); ok {
		if n, err := strconv.ParseInt(ns, 10, 64); err == nil {
			f.After = &fsm.IntentCursor{At: time.Unix(0, n).UTC(), ID: id}
		}
	}
	list, next := b.s.reads.ListIntents(f)
	page := web.IntentPage{Intents: make([]web.IntentSummary, len(list))}
	for i, in := range list {
		page.Intents[i] = summary(in)
	}
	if next != nil {
		page.Next = strconv.FormatInt(next.At.UnixNano(), 10) + "." + next.ID
	}
	return page
}

func summary(in fsm.Intent) web.IntentSummary {
	s := web.IntentSummary{ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID, Tool: in.Tool,
		State: in.State, AdmittedAt: in.AdmittedAt, UpdatedAt: in.UpdatedAt, Receipt: in.Receipt}
	if in.Dispatch != nil {
		s.Node = in.Dispatch.Node
	}
	if in.Error != nil {
		s.ErrorCode = string(in.Error.Code)
	}
	return s
}

func (b dashBackend) IntentSummary(id string) (web.IntentSummary, bool) {
	in, ok := b.s.reads.Intent(id)
	if !ok {
		return web.IntentSummary{}, false
	}
	return summary(in), true
}

func (b dashBackend) Intent(id string) (web.IntentDetail, bool) {
	in, ok := b.s.reads.Intent(id)
	if !ok {
		return web.IntentDetail{}, false
	}
	d := web.IntentDetail{IntentSummary: summary(in), PayloadHash: in.PayloadHash, IdempotencyKey: in.IdempotencyKey,
		ExpiresAt: in.ExpiresAt, PolicyHash: in.Decision.PolicyHash, Allowed: in.Decision.Allow,
		ApprovalRequired: in.Decision.ApprovalRequired, Policies: in.Decision.Policies, SupersededBy: in.SupersededBy}
	if pi, err := protocol.DecodeIntent(in.Raw, len(in.Raw)+1); err == nil {
		if c, err := protocol.Canonicalize(pi.Params); err == nil {
			d.Params = string(c)
		}
	} else if v := jsontext.Value(in.Raw); v.IsValid() {
		// An attempt refused as malformed keeps what it was sent.
		d.Params = string(in.Raw)
	}
	if a := in.Approval; a != nil {
		d.Approval = &web.ApprovalInfo{ID: a.ID, Approver: a.Approver, Hash: a.Hash}
		if pa, err := protocol.DecodeApproval(in.ApprovalRaw, len(in.ApprovalRaw)+1); err == nil {
			d.Approval.Decision, d.Approval.IssuedAt = pa.Decision, pa.IssuedAt
		}
	}
	if in.Dispatch != nil {
		d.Dispatch = &web.DispatchInfo{ID: in.Dispatch.ID, Node: in.Dispatch.Node, Fence: in.Dispatch.Fence}
	}
	if len(in.Result) > 0 {
		var r protocol.Result
		if err := json.Unmarshal(in.Result, &r); err == nil {
			d.Result = &web.ResultInfo{Status: r.Status, Sandbox: r.Sandbox, Output: r.Output, OutputEncoding: r.OutputEncoding,
				OutputKept: true, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, ExitCode: r.ExitCode,
				OutputBytes: r.OutputBytes, Truncated: r.Truncated}
			if r.Version() == 2 {
				// From the output table, never the receipt; the pages
				// show a detail only to a viewer of the intent's tenant.
				d.Result.Output, d.Result.OutputEncoding, d.Result.OutputKept = "", "", false
				if _, data, ok := (intentsAPI{b.s}).intentOutput(in); ok {
					d.Result.Output, d.Result.OutputEncoding = protocol.EncodeOutput(data)
					d.Result.OutputKept = true
				}
			}
		}
	}
	addAttest(d.Result, in.Result)
	if in.Error != nil {
		d.Error = &web.Error{Code: string(in.Error.Code), Message: in.Error.Message}
	}
	return d, true
}

func (b dashBackend) Nodes() []web.Node {
	var out []web.Node
	for _, n := range b.s.reads.Nodes() {
		out = append(out, b.node(n))
	}
	return out
}

func (b dashBackend) node(n fsm.Node) web.Node {
	v := nodesAPI{b.s}.view(n)
	w := web.Node{ID: n.ID, Name: n.Name, Status: n.Status, OS: n.OS, Arch: n.Arch, Version: n.Version, Server: n.Server,
		Labels: n.Labels, Tiers: n.Tiers, Tools: slices.Sorted(maps.Keys(n.Tools)), Concurrency: n.Concurrency,
		InFlight: n.InFlight, EnrolledAt: n.EnrolledAt, UpdatedAt: n.UpdatedAt}
	if v.LastHeartbeat != "" {
		w.LastHeartbeat, _ = protocol.ParseTime(v.LastHeartbeat)
	}
	return w
}

func (b dashBackend) Node(id string, dispatches int) (web.Node, []web.IntentSummary, bool) {
	n, ok := b.s.reads.Node(id)
	if !ok {
		return web.Node{}, nil, false
	}
	var recent []web.IntentSummary
	for _, iid := range b.s.reads.NodeDispatches(id, dispatches) {
		if in, ok := b.s.reads.Intent(iid); ok {
			recent = append(recent, summary(in))
		}
	}
	return b.node(n), recent, true
}

func (b dashBackend) SetNodeStatus(ctx context.Context, id, action string) error {
	status := map[string]string{"drain": fsm.NodeDraining, "ready": fsm.NodeReady, "revoke": fsm.NodeRevoked}[action]
	if status == "" {
		return webError(refusal(protocol.CodeNotFound, "action must be drain, ready or revoke"))
	}
	res, err := b.s.applyAdminAnywhere(ctx, fsm.MsgNodeStatus, fsm.NodeStatus{At: b.s.now(), Node: id, Status: status})
	switch {
	case err != nil:
		return webError(raftError(err))
	case res.Err != nil:
		return webError(refusal(res.Err.Code, res.Err.Message))
	}
	return nil
}
