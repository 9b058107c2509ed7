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
}

// schedule gives a runnable intent to a node, queues it while every eligible
// node is at its concurrency limit, or rejects it when no node could ever take
// it now. The choice is a function of the replicated state only.
func (f *FSM) schedule(in *Intent, index uint64) []string {
	n, eligible := f.pick(in)
	switch {
	case !eligible:
		in.State = StateRejected
		in.Error = &protocol.ErrorBody{Code: CodeNoEligibleNode, Message: "no ready node may run " + in.Tool + " for this intent"}
		return []string{in.ID}
	case n == nil:
		f.state.Queue = append(f.state.Queue, in.ID)
		return nil
	}
	return f.dispatch(in, n, index)
}

// pick returns the eligible node with the fewest dispatches in flight and a
// free slot (nil when all are full), and whether any node is eligible. An
// intent targeted at one node looks at the nodes of that id or name only;
// any other walks the scheduler's index (sched.go). Equal loads are spread
// by hashes: the choice is a function of the replicated state only.
func (f *FSM) pick(in *Intent) (*Node, bool) {
	s := f.state
	tool := s.Tools[in.Tool]
	if tool == nil {
		return nil, false
	}
	t := in.Target
	if t == nil || t.Node == "" {
		return f.pickOnRing(in, tool)
	}
	var best *Node
	eligible := false
	consider := func(n *Node) {
		if !f.eligible(n, in, tool) {
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
	for _, id := range f.idx.names[t.Node] {
		if n := s.Nodes[id]; n != nil && id != t.Node {
			consider(n)
		}
	}
	return best, eligible
}

func (f *FSM) eligible(n *Node, in *Intent, tool *Tool) bool {
	if n.Status != NodeReady || n.Tools[tool.Name] != tool.Hash || !slices.Contains(n.Tiers, tool.Tier) {
		return false
	}
	if !subset(tool.Selector, n.Labels) {
		return false
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
func (f *FSM) dispatch(in *Intent, n *Node, index uint64) []string {
	s := f.state
	now := s.Clock
	tool := s.Tools[in.Tool]
	id := derive("writ dispatch id", in.ID, index)
	d := &Dispatch{
		ID: "dsp-" + hex.EncodeToString(id[:16]), IntentID: in.ID, Node: n.ID, Fence: index,
		IssuedAt: now, ExpiresAt: now.Add(f.cfg.DispatchTTL), Open: true,
	}
	nonce := derive("writ dispatch nonce", d.ID, index)
	d.Nonce = base64.StdEncoding.EncodeToString(nonce[:16])
	if in.ExpiresAt.Before(d.ExpiresAt) {
		d.ExpiresAt = in.ExpiresAt
	}
	d.Deadline = d.ExpiresAt.Add(time.Duration(tool.TimeoutMS)*time.Millisecond + f.cfg.DispatchGrace)
	s.Dispatches[d.ID] = d
	f.idx.views.dispatched(d)
	f.idx.deadlines.add(d.Deadline, d.ID)
	f.idx.opened(n.ID, d.ID)
	n.InFlight++
	f.reschedule(n)
	in.Dispatch = &protocol.DispatchRef{ID: d.ID, Node: n.ID, Fence: index}
	in.UpdatedAt, in.Index = now, index
	return []string{in.ID, NodeWatch(n.ID)}
}

// drainQueue dispatches queued intents while nodes have free slots, in the
// order they were queued. An intent that can no longer run anywhere is
// rejected; one whose nodes are all still busy stays queued.
func (f *FSM) drainQueue(index uint64) []string {
	s := f.state
	if len(s.Queue) == 0 {
		return nil
	}
	var changed []string
	keep := s.Queue[:0]
	for _, id := range s.Queue {
		in := s.Intents[id]
		if in == nil || in.State != StateDispatched || in.Dispatch != nil {
			continue // expired while queued, or pruned
		}
		n, eligible := f.pick(in)
		switch {
		case !eligible:
			in.State = StateRejected
			in.Error = &protocol.ErrorBody{Code: CodeNoEligibleNode, Message: "no ready node may run " + in.Tool + " for this intent"}
			in.UpdatedAt, in.Index = s.Clock, index
			changed = append(changed, in.ID)
		case n == nil:
			keep = append(keep, id)
		default:
			changed = append(changed, f.dispatch(in, n, index)...)
		}
	}
	clear(s.Queue[len(keep):])
	s.Queue = keep
	return changed
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
