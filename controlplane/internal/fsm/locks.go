package fsm

import (
	"time"

	"github.com/writhq/writ/protocol"
)

// Locks halt what they match at once: no intent is admitted, nothing is
// dispatched, and what runs is stopped (through the cancel path).
const (
	MsgPutLock    MsgType = 42
	MsgDeleteLock MsgType = 43
)

// Lock matches intents by the members that are set: all of them must equal
// the intent's (Node: the node a dispatch goes to). At least one is set. It
// holds until it is deleted or, when ExpiresAt is set, until the log's clock
// reaches it.
type Lock struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant,omitzero"`
	Principal string    `json:"principal,omitzero"`
	Tool      string    `json:"tool,omitzero"`
	Node      string    `json:"node,omitzero"`
	Reason    string    `json:"reason"`
	By        string    `json:"by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// PutLock creates a lock; the server that proposes it made its id.
type PutLock struct {
	At   time.Time `json:"at"`
	Lock Lock      `json:"lock"`
}

// DeleteLock removes a lock.
type DeleteLock struct {
	At time.Time `json:"at"`
	ID string    `json:"id"`
}

// active reports whether the lock holds at now.
func (l *Lock) active(now time.Time) bool { return l.ExpiresAt.IsZero() || l.ExpiresAt.After(now) }

// matches reports whether the lock matches an intent, on node when node is
// set; a lock that names a node matches no intent without one.
func (l *Lock) matches(in *Intent, node string) bool {
	switch {
	case l.Tenant != "" && l.Tenant != in.Tenant,
		l.Principal != "" && l.Principal != in.Principal,
		l.Tool != "" && l.Tool != in.Tool,
		l.Node != "" && l.Node != node:
		return false
	}
	return true
}

// lockOf returns the first active lock, in id order, matching the intent on
// node ("" for admission: then locks naming a node do not match), or nil.
func (f *FSM) lockOf(in *Intent, node string) *Lock {
	if len(f.state.Locks) == 0 {
		return nil
	}
	now := f.state.Clock
	for _, id := range sortedKeys(f.state.Locks) {
		if l := f.state.Locks[id]; l.active(now) && l.matches(in, node) {
			return l
		}
	}
	return nil
}

// locked reports whether an active lock matches the intent on node: what
// lockOf says, without ordering the locks (the scheduler asks it of every
// node it looks at).
func (f *FSM) locked(in *Intent, node string) bool {
	for _, l := range f.state.Locks {
		if l.active(f.state.Clock) && l.matches(in, node) {
			return true
		}
	}
	return false
}

func lockedError(l *Lock) *protocol.ErrorBody {
	return &protocol.ErrorBody{Code: protocol.CodeLocked, Message: "lock " + l.ID + ": " + l.Reason}
}

// applyPutLock installs a lock, then stops what it matches: waiting intents
// end canceled (locked) with their receipts, and dispatched ones are
// canceled as a cancel does (their nodes are told; their results end them).
func (f *FSM) applyPutLock(index uint64, c *PutLock) (Result, []string) {
	now := f.advance(c.At)
	l := c.Lock
	switch {
	case l.ID == "" || (l.Tenant == "" && l.Principal == "" && l.Tool == "" && l.Node == ""):
		return refuse(protocol.CodeMalformed, "a lock needs an id and a tenant, principal, tool or node"), nil
	case f.state.Locks[l.ID] != nil:
		return refuse(protocol.CodeLockExists, "lock %q exists", l.ID), nil
	}
	l.CreatedAt = now
	f.state.Locks[l.ID] = &l
	// What may match: the intents waiting for approval, the queue, and the
	// open dispatches — read from the indexes, never every intent kept.
	var waiting []string
	if l.Node == "" {
		waiting = append(sortedKeys(f.idx.views.pending), f.state.Queue...)
	}
	var open []string
	for _, node := range sortedKeys(f.idx.open) {
		if l.Node == "" || l.Node == node {
			open = append(open, sortedKeys(f.idx.open[node])...)
		}
	}
	var changed []string
	for _, id := range waiting {
		in := f.state.Intents[id]
		if in == nil || (in.State != StatePendingApproval && in.State != StateQueued) || !l.matches(in, "") {
			continue
		}
		in.State, in.Error = StateCanceled, lockedError(&l)
		in.WaitUntil = time.Time{}
		in.UpdatedAt, in.Index = now, index
		changed = append(changed, in.ID)
	}
	for _, id := range open {
		d := f.state.Dispatches[id]
		in := f.state.Intents[d.IntentID]
		if in != nil && in.State == StateDispatched && l.matches(in, d.Node) {
			ch, _ := f.cancelIntent(in, index, "lock "+l.ID)
			changed = append(changed, ch...)
		}
	}
	return Result{}, changed
}

// applyDeleteLock removes a lock; queued intents may then be dispatched.
func (f *FSM) applyDeleteLock(index uint64, c *DeleteLock) (Result, []string) {
	f.advance(c.At)
	if f.state.Locks[c.ID] == nil {
		return refuse(protocol.CodeNotFound, "no lock %q", c.ID), nil
	}
	delete(f.state.Locks, c.ID)
	return Result{}, f.scheduler().drainQueue(index)
}

// expireLocks forgets the locks whose time is up and reports whether there
// were any (then queued intents may be dispatched).
func (f *FSM) expireLocks(now time.Time) bool {
	gone := false
	for id, l := range f.state.Locks { // deleting the expired ones: any order gives the same state
		if !l.active(now) {
			delete(f.state.Locks, id)
			gone = true
		}
	}
	return gone
}

// Locks returns the locks in force, by id.
func (rd Reader) Locks() []Lock {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := []Lock{}
	for _, id := range sortedKeys(rd.f.state.Locks) {
		if l := rd.f.state.Locks[id]; l.active(rd.f.state.Clock) {
			out = append(out, *l)
		}
	}
	return out
}
