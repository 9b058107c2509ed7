package controlplane

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/writhq/writ/controlplane/internal/fsm"
	"github.com/writhq/writ/controlplane/internal/policy"
	"github.com/writhq/writ/controlplane/internal/raftnode"
	"github.com/writhq/writ/protocol"
)

// apiError is an answer that is not an intent response: a refusal before or
// instead of admission. Nothing was recorded.
type apiError struct {
	code protocol.Code
	msg  string
}

func (e *apiError) Error() string { return string(e.code) + ": " + e.msg }

func refusal(code protocol.Code, msg string) *apiError { return &apiError{code, msg} }

func fromProtocol(err error) *apiError {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return refusal(pe.Code, pe.Message)
	}
	return refusal(protocol.CodeInternal, "internal error")
}

// admit verifies, authorizes and proposes one intent — DESIGN.md "The path of
// one intent", steps 2 to 4. It returns the intent's id once the FSM has
// applied the entry. An intent that fails authentication is refused here and
// never reaches Raft; every authenticated attempt is recorded, failures
// included, so that it has an outcome.
//
// Verification and the decision are CPU-bound: each runs in one of s.cpu's
// slots (admitgate.go), waiting parked for one, so that however many
// admissions are in flight few compete with Raft for the cores.
//
// The entry carries the FSM index they were made against: if keys, tools or
// the policy set change in the log before it, the FSM refuses it and both are
// made again (recheck), so that an intent is admitted only under the rules in
// force at its place in the log.
func (ep intentsAPI) admit(ctx context.Context, raw []byte) (string, *apiError) {
	return ep.srv.recheck("intent", func() (string, *apiError) { return ep.admitOnce(ctx, raw) })
}

func (ep intentsAPI) admitOnce(ctx context.Context, raw []byte) (string, *apiError) {
	var (
		in    *protocol.Intent
		canon []byte
		err   error
	)
	at := ep.srv.checkIndex()
	ep.srv.cpu.do(func() {
		in, canon, err = ep.srv.verifier.VerifyIntentCanonical(raw, intentKeys{ep.srv.reads, ep.srv.keys})
	})
	if protocol.CodeOf(err) == protocol.CodeUnknownKey && ep.srv.reads.Index() < ep.srv.node.Raft.CommitIndex() {
		// A key registered in an entry this server has not applied yet.
		if !ep.srv.caughtUp(ctx) {
			return "", lagging()
		}
		at = ep.srv.checkIndex()
		ep.srv.cpu.do(func() {
			in, canon, err = ep.srv.verifier.VerifyIntentCanonical(raw, intentKeys{ep.srv.reads, ep.srv.keys})
		})
	}
	switch protocol.CodeOf(err) {
	case "":
	case protocol.CodeMalformed, protocol.CodeUnknownKey, protocol.CodeBadSignature:
		return "", fromProtocol(err)
	default:
		// Authenticated, but not acceptable (payload hash, TTL, skew, expiry):
		// recorded as rejected.
		decoded, derr := protocol.DecodeIntent(raw, ep.srv.verifier.Config().MaxBytes)
		if derr != nil {
			return "", fromProtocol(derr)
		}
		var pe *protocol.Error
		errors.As(err, &pe)
		canon, cerr := protocol.Canonicalize(raw)
		if cerr != nil {
			return "", fromProtocol(cerr)
		}
		return ep.srv.propose(ctx, decoded, canon, fsm.Decision{Error: &protocol.ErrorBody{Code: pe.Code, Message: pe.Message}}, at)
	}
	var d fsm.Decision
	ep.srv.cpu.do(func() { d = ep.decide(in) })
	if d.Error != nil && d.Error.Code == protocol.CodeUnknownTool && ep.srv.reads.Index() < ep.srv.node.Raft.CommitIndex() {
		if !ep.srv.caughtUp(ctx) {
			return "", lagging()
		}
		// at stays: the intent was verified against the state at it.
		ep.srv.cpu.do(func() { d = ep.decide(in) })
	}
	return ep.srv.propose(ctx, in, canon, d, at)
}

// decide makes the leader's decision on a verified intent: the tool exists,
// the params fit its schema, and policy allows it (and says whether approval
// is needed).
func (ep intentsAPI) decide(in *protocol.Intent) fsm.Decision {
	// An unknown tool or params outside its schema is rejected before the
	// policy is consulted: the decision names no policy set, so the receipt's
	// policy is null and its error says what failed.
	tool, ok := ep.srv.catalog.tool(in.Tool)
	if !ok {
		return fsm.Decision{Error: &protocol.ErrorBody{Code: protocol.CodeUnknownTool, Message: "no tool " + in.Tool + " is registered"}}
	}
	if err := tool.Validate(in.Params); err != nil {
		return fsm.Decision{Error: &protocol.ErrorBody{Code: protocol.CodeParamsInvalid, Message: err.Error()}}
	}
	set := ep.srv.catalog.policySet()
	req, err := policy.NewInvokeRequest(in, policyTool(tool))
	if err != nil {
		return fsm.Decision{PolicyHash: set.Hash(), Error: &protocol.ErrorBody{Code: protocol.CodePolicyDenied, Message: err.Error()}}
	}
	d := set.Invoke(req)
	out := fsm.Decision{Allow: d.Allow, ApprovalRequired: d.Allow && (d.ApprovalRequired || tool.NeedsApproval()), PolicyHash: set.Hash(), Policies: d.Policies}
	// Several distinct approvers: the most the policy's @approvals and the
	// tool's approvals_required ask for.
	if n := max(d.Approvers, tool.ApprovalsRequired); out.ApprovalRequired && n > 1 {
		out.Approvals = n
	}
	if !d.Allow {
		msg := "no policy permits this intent"
		switch {
		case len(d.Errors) > 0:
			// Policy errors name policies and positions: for operators, in
			// the log; the orchestrator learns which policies decided. Cedar's
			// messages are left out: they quote values, which may be params.
			ep.srv.log.Warn("policy evaluation failed; denied", "intent_id", in.ID, "policies", d.Policies, "errors", errorPlaces(d.Errors))
			msg = "denied: policy evaluation failed in " + strings.Join(d.Policies, ", ")
		case len(d.Policies) > 0:
			msg = "denied by " + strings.Join(d.Policies, ", ")
		}
		out.Error = &protocol.ErrorBody{Code: protocol.CodePolicyDenied, Message: msg}
	}
	return out
}

// propose puts the intent, in its canonical form, and the decision made
// against the FSM at index at through Raft, grouped with the admissions
// proposed at the same time (group commit: one entry, one fsync on each
// server, for all of them; each is applied as if alone, in the order
// proposed, and answered on its own).
func (s *Server) propose(ctx context.Context, in *protocol.Intent, canon []byte, d fsm.Decision, at uint64) (string, *apiError) {
	expires, _ := protocol.ParseTime(in.ExpiresAt)
	s.proposing(fsm.MsgAdmitBinary)
	start := time.Now()
	res, _, err := s.node.Propose(ctx, fsm.MsgAdmitBinary, &fsm.Admit{
		At: s.now(), Intent: canon, ID: in.ID, Tenant: in.Tenant, Principal: in.Principal, RunID: in.RunID,
		Tool: in.Tool, PayloadHash: in.PayloadHash, IdempotencyKey: in.IdempotencyKey, ExpiresAt: expires, Decision: d,
		Target: in.Target, CheckIndex: at,
	})
	if err != nil {
		return "", raftError(err)
	}
	s.metrics.applySeconds.Observe(time.Since(start).Seconds())
	if res.Err != nil {
		return "", refusal(res.Err.Code, res.Err.Message)
	}
	return res.IntentID, nil
}

// groupedCommands are the commands that apply proposes through group
// commit, as admissions are: a run's result (its output, the result, an
// abandoned dispatch), an approval and a cancel, which many agents and
// approvers send at once, each of which would otherwise be an entry of its
// own. The FSM applies each command of a group exactly as if it were its
// own entry.
var groupedCommands = map[fsm.MsgType]bool{fsm.MsgResult: true, fsm.MsgPutOutput: true, fsm.MsgAbandon: true,
	fsm.MsgApprove: true, fsm.MsgApproveChecked: true, fsm.MsgCancel: true}

// apply proposes a command and times it until it is applied here.
func (s *Server) apply(ctx context.Context, t fsm.MsgType, cmd any) (fsm.Result, error) {
	start := time.Now()
	propose := s.node.Apply
	if groupedCommands[t] {
		propose = s.node.Propose
	}
	res, _, err := propose(ctx, t, cmd)
	if err == nil {
		s.metrics.applySeconds.Observe(time.Since(start).Seconds())
	}
	return res, err
}

func raftError(err error) *apiError {
	if errors.Is(err, raftnode.ErrNotLeader) {
		return refusal(protocol.CodeNoLeader, "this server is not the leader; retry")
	}
	return refusal(protocol.CodeInternal, "the write was not committed")
}

// wait blocks until the intent reaches a final state, ctx ends, or d passes,
// woken by the FSM's notifications rather than by polling.
func (s *Server) wait(ctx context.Context, id string, d time.Duration) (fsm.Intent, bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		if d <= 0 {
			return s.reads.Intent(id)
		}
		in, changed, ok := s.reads.WatchIntent(id)
		if !ok || fsm.Final(in.State) {
			return in, ok
		}
		select {
		case <-changed:
		case <-timer.C:
			return s.reads.Intent(id)
		case <-ctx.Done():
			return s.reads.Intent(id)
		}
	}
}

// errorPlaces keeps of each policy error ("policy "ID" at line L, column C:
// message") its policy and position, without Cedar's message.
func errorPlaces(errs []string) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		i := strings.Index(e, ", column ")
		if i < 0 {
			out = append(out, "(a policy error)")
			continue
		}
		j := strings.Index(e[i:], ": ")
		if j < 0 {
			j = len(e) - i
		}
		out = append(out, e[:i+j])
	}
	return out
}
