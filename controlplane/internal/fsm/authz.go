package fsm

import "github.com/writhq/writ/protocol"

// The leader authenticates and authorizes an admission or an approval against
// its FSM before it proposes it (keys, the tool's registration, the policy
// set), and the FSM applies the decision it carries without checking again:
// followers run no Cedar. So that an entry ordered before it in the log cannot
// change the rules under it, the command carries the index of the state the
// leader checked against (CheckIndex), the state the index of the last entry
// that changed what those checks read (State.AuthIndex), and a command checked
// before that entry is refused with protocol.CodeAuthorizationChanged: the
// leader checks again, against the state that includes the change.

// authChanges are the commands that change what an admission's or an
// approval's check reads: orchestrator keys (authentication of intents),
// approver keys (of approvals), tools (the tool exists, its schema, its
// manifest as policy sees it) and the policy set (both actions). Tenants'
// budgets, locks and nodes are checked in apply itself; users and dashboard
// sessions only say who may post an approval whose signature already
// authorizes it.
var authChanges = map[MsgType]bool{
	MsgPutIntentKey: true, MsgDeleteIntentKey: true,
	MsgPutApproverKey: true, MsgDeleteApproverKey: true,
	MsgPutTool: true, MsgPutPolicy: true,
}

// noteAuthChange records index as the last authorization change when an
// admin entry that marks its change (AdminCmd.Authz) changed what a check
// reads. Entries without the mark (every entry written before it existed,
// and commands proposed bare) record nothing: a replica that replays such an
// entry and one that restored a snapshot taken after it by a server that kept
// no AuthIndex must keep the same state.
func (f *FSM) noteAuthChange(index uint64, c *AdminCmd, changed bool) {
	if c.Authz && changed && authChanges[c.Type] {
		f.state.AuthIndex = index
	}
}

// authStale refuses a command whose leader checked it against the state at
// index check when an authorization change was applied after that index. A
// check index of 0 (every command written before it was carried) is not
// compared: such entries apply as they always did.
func (f *FSM) authStale(check uint64) *protocol.ErrorBody {
	if check == 0 || f.state.AuthIndex <= check {
		return nil
	}
	return refuse(protocol.CodeAuthorizationChanged,
		"checked against the state at index %d; keys, tools or the policy set changed at index %d", check, f.state.AuthIndex).Err
}

// AuthIndex returns the index of the last entry that changed what an
// admission's or an approval's check reads (0: none recorded).
func (rd Reader) AuthIndex() uint64 {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return rd.f.state.AuthIndex
}
