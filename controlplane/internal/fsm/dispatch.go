package fsm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/writhq/writ/protocol"
)

// Dispatch is the record of one intent given to one node. Everything a signed
// dispatch says is derived from it, the intent and the tool, so that any
// server can sign it for the node whose session it holds.
type Dispatch struct {
	ID       string `json:"id"`
	IntentID string `json:"intent_id"`
	Node     string `json:"node"`
	// Fence is the index of the log entry that made the dispatch.
	Fence     uint64    `json:"fence"`
	Nonce     string    `json:"nonce"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Deadline is when a node that has not reported is taken to have
	// vanished: the intent ends unknown. The node does not start a dispatch
	// after ExpiresAt, and a run lasts at most the tool's timeout.
	Deadline time.Time `json:"deadline"`
	// Open until the dispatch has a result or was given up as unknown.
	Open   bool           `json:"open"`
	Result jsontext.Value `json:"result,omitzero"`
	// Cancel is set when the intent was canceled while dispatched: the
	// server holding the node's session sends it FrameCancel. CancelBy
	// names who asked (cancel.go).
	Cancel   bool   `json:"cancel,omitzero"`
	CancelBy string `json:"cancel_by,omitzero"`
}

// scheduler is the apply side's scheduling: which node runs a queued
// intent, and when an intent stops waiting for one. It runs under the FSM's
// write lock, from the apply functions, and decides by the replicated state
// only (dispatch.go, and its index of ready nodes in sched.go).
type scheduler struct{ f *FSM }

func (f *FSM) scheduler() scheduler { return scheduler{f} }

// schedule queues a runnable intent and gives it to a node at once when one
// is eligible with a free slot (place). The choice is a function of the
// replicated state only.
func (sc scheduler) schedule(in *Intent, index uint64) []string {
	in.State = StateQueued
	changed, left := sc.place(in, index)
	if !left {
		sc.f.state.Queue = append(sc.f.state.Queue, in.ID)
	}
	return changed
}

// place decides what becomes of a queued intent now, by the log's clock: it
// ends expired when its expiry has come (it is never dispatched after it);
// it is dispatched to an eligible node with a free slot; it stays queued
// while an eligible node is busy; with no eligible node it waits for one
// until WaitUntil (node_wait, at most its expiry), and ends rejected
// no_eligible_node when that wait is over or no registered node could ever
// run it. It reports whether the intent left the queue.
func (sc scheduler) place(in *Intent, index uint64) (changed []string, left bool) {
	now := sc.f.state.Clock
	if !in.ExpiresAt.After(now) {
		sc.expire(in, index)
		return []string{in.ID}, true
	}
	n, eligible := sc.pick(in)
	switch {
	case n != nil:
		in.WaitUntil = time.Time{}
		return sc.dispatch(in, n, index), true
	case eligible:
		in.WaitUntil = time.Time{} // a node may run it: it waits for a slot
		return nil, false
	case !in.WaitUntil.IsZero():
		if now.Before(in.WaitUntil) {
			return nil, false
		}
		sc.noNode(in, index, "no node that may run "+in.Tool+" for this intent was ready by "+protocol.FormatTime(in.WaitUntil))
		return []string{in.ID}, true
	case sc.f.cfg.NodeWait <= 0 || !sc.possible(in):
		sc.noNode(in, index, "no ready node may run "+in.Tool+" for this intent")
		return []string{in.ID}, true
	}
	in.WaitUntil = now.Add(sc.f.cfg.NodeWait)
	if in.ExpiresAt.Before(in.WaitUntil) {
		in.WaitUntil = in.ExpiresAt
	}
	sc.f.idx.waits.add(in.WaitUntil, in.ID)
	return nil, false
}

// expire ends an intent that was not dispatched by its expiry.
func (sc scheduler) expire(in *Intent, index uint64) {
	in.State = StateExpired
	in.Error = &protocol.ErrorBody{Code: protocol.CodeExpired, Message: "expired at " + protocol.FormatTime(in.ExpiresAt)}
	in.UpdatedAt, in.Index = sc.f.state.Clock, index
}

// noNode rejects an intent no node ran, and releases what its admission
// took: its idempotency key, so that a retry with the same key once a node
// can take it proceeds, and its use of its run's budget.
func (sc scheduler) noNode(in *Intent, index uint64, msg string) {
	s := sc.f.state
	in.State = StateRejected
	in.Error = &protocol.ErrorBody{Code: protocol.CodeNoEligibleNode, Message: msg}
	in.UpdatedAt, in.Index = s.Clock, index
	in.WaitUntil = time.Time{}
	if in.Unbound {
		return
	}
	key := scoped(in.Tenant, in.IdempotencyKey)
	if e := s.Idempotency[key]; e != nil && e.IntentID == in.ID {
		delete(s.Idempotency, key)
	}
	if run := s.Runs[scoped(in.Tenant, in.RunID)]; run != nil && run.Used > 0 {
		run.Used--
	}
	in.Unbound = true
	sc.f.idx.rejected.add(in.AdmittedAt, in.ID)
}

// possible reports whether some registered node could ever run in: one not
// revoked that has not yet said what it may run, or whose last hello listed
// the tool (whatever its manifest hash: its owner may update it) and its
// tier, with labels that fit the tool's selector and the intent's target.
// Its status and load do not matter: a node that is down may connect, a
// draining one be undrained.
func (sc scheduler) possible(in *Intent) bool {
	s := sc.f.state
	tool := s.Tools[in.Tool]
	if tool == nil {
		return false
	}
	could := func(n *Node) bool {
		t := in.Target
		switch {
		case n.Status == NodeRevoked:
			return false
		case t != nil && t.Node != "" && t.Node != n.ID && t.Node != n.Name:
			return false
		case n.Concurrency == 0: // enrolled, never connected
			return true
		}
		if _, listed := n.Tools[tool.Name]; !listed || !slices.Contains(n.Tiers, tool.Tier) || !subset(tool.Selector, n.Labels) {
			return false
		}
		return t == nil || subset(t.Labels, n.Labels)
	}
	if t := in.Target; t != nil && t.Node != "" {
		if n := s.Nodes[t.Node]; n != nil && could(n) {
			return true
		}
		for _, id := range sc.f.idx.names[t.Node] {
			if n := s.Nodes[id]; n != nil && could(n) {
				return true
			}
		}
		return false
	}
	x := sc.f.idx.sched
	if len(x.fresh) > 0 {
		return true
	}
	for id := range x.listing[tool.Name] { // any order gives the same answer
		if n := s.Nodes[id]; n != nil && could(n) {
			return true
		}
	}
	return false
}

// pick returns the eligible node with the fewest dispatches in flight and a
// free slot (nil when all are full), and whether any node is eligible. An
// intent targeted at one node looks at the nodes of that id or name only;
// any other walks the scheduler's index (sched.go). Equal loads are spread
// by hashes: the choice is a function of the replicated state only.
func (sc scheduler) pick(in *Intent) (*Node, bool) {
	s := sc.f.state
	tool := s.Tools[in.Tool]
	if tool == nil {
		return nil, false
	}
	t := in.Target
	if t == nil || t.Node == "" {
		return sc.pickOnRing(in, tool)
	}
	var best *Node
	eligible := false
	consider := func(n *Node) {
		if !sc.eligible(n, in, tool) {
			return
		}
		eligible = true
		if n.InFlight < n.Concurrency && (best == nil || targetBefore(in, n, best)) {
			best = n
		}
	}
	if n := s.Nodes[t.Node]; n != nil {
		consider(n)
	}
	for _, id := range sc.f.idx.names[t.Node] {
		if n := s.Nodes[id]; n != nil && id != t.Node {
			consider(n)
		}
	}
	return best, eligible
}

func (sc scheduler) eligible(n *Node, in *Intent, tool *Tool) bool {
	if n.Status != NodeReady || n.Tools[tool.Name] != tool.Hash || !slices.Contains(n.Tiers, tool.Tier) {
		return false
	}
	if !subset(tool.Selector, n.Labels) {
		return false
	}
	if sc.f.locked(in, n.ID) {
		return false // a lock holds the intent on this node
	}
	if t := in.Target; t != nil {
		if t.Node != "" && t.Node != n.ID && t.Node != n.Name {
			return false
		}
		if !subset(t.Labels, n.Labels) {
			return false
		}
	}
	return true
}

// dispatch records the dispatch of in to n, made by the entry at index.
func (sc scheduler) dispatch(in *Intent, n *Node, index uint64) []string {
	s := sc.f.state
	now := s.Clock
	tool := s.Tools[in.Tool]
	id := derive("writ dispatch id", in.ID, index)
	d := &Dispatch{
		ID: "dsp-" + hex.EncodeToString(id[:16]), IntentID: in.ID, Node: n.ID, Fence: index,
		IssuedAt: now, ExpiresAt: now.Add(sc.f.cfg.DispatchTTL), Open: true,
	}
	nonce := derive("writ dispatch nonce", d.ID, index)
	d.Nonce = base64.StdEncoding.EncodeToString(nonce[:16])
	if in.ExpiresAt.Before(d.ExpiresAt) {
		d.ExpiresAt = in.ExpiresAt
	}
	d.Deadline = d.ExpiresAt.Add(time.Duration(tool.TimeoutMS)*time.Millisecond + sc.f.cfg.DispatchGrace)
	s.Dispatches[d.ID] = d
	sc.f.idx.views.dispatched(d)
	sc.f.idx.deadlines.add(d.Deadline, d.ID)
	sc.f.idx.opened(n.ID, d.ID)
	n.InFlight++
	sc.reschedule(n)
	in.State = StateDispatched
	in.Dispatch = &protocol.DispatchRef{ID: d.ID, Node: n.ID, Fence: index}
	in.UpdatedAt, in.Index = now, index
	return []string{in.ID, NodeWatch(n.ID)}
}

// drainQueue places every queued intent (place), in the order they were
// queued: those that can run go to nodes with free slots, those past their
// expiry or their wait for a node end, and the rest stay queued.
func (sc scheduler) drainQueue(index uint64) []string {
	s := sc.f.state
	if len(s.Queue) == 0 {
		return nil
	}
	var changed []string
	keep := s.Queue[:0]
	for _, id := range s.Queue {
		in := s.Intents[id]
		if in == nil || in.State != StateQueued {
			continue // expired by a tick, or pruned
		}
		ch, left := sc.place(in, index)
		changed = append(changed, ch...)
		if !left {
			keep = append(keep, id)
		}
	}
	clear(s.Queue[len(keep):])
	s.Queue = keep
	return changed
}

// upgradeQueue gives the intents of a state written before the queued state
// existed (queued ones were dispatched without a dispatch) their state.
func upgradeQueue(s *State) {
	for _, id := range s.Queue {
		if in := s.Intents[id]; in != nil && in.State == StateDispatched && in.Dispatch == nil {
			in.State = StateQueued
		}
	}
}

func derive(domain, id string, index uint64) [32]byte {
	h := sha256.New()
	h.Write([]byte(domain + "\x00" + id + "\x00"))
	h.Write(binary.BigEndian.AppendUint64(nil, index))
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
