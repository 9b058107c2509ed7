package fsm

import (
	"cmp"
	"maps"
	"slices"
)

// Node returns a copy of a node's record.
func (f *FSM) Node(id string) (Node, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.state.Nodes[id]
	if !ok {
		return Node{}, false
	}
	return n.clone(), true
}

// Nodes returns every enrolled node, by id.
func (f *FSM) Nodes() []Node {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]Node, 0, len(f.state.Nodes))
	for _, id := range sortedKeys(f.state.Nodes) {
		out = append(out, f.state.Nodes[id].clone())
	}
	return out
}

// HeldBy returns the ids of the nodes recorded as not down with their
// session on server, in no order: one pass over the nodes, copying nothing
// else, as a server checks it every heartbeat.
func (f *FSM) HeldBy(server string) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for id, n := range f.state.Nodes {
		if n.Server == server && n.Status != NodeDown {
			out = append(out, id)
		}
	}
	return out
}

// JoinToken returns an unused join token.
func (f *FSM) JoinToken(id string) (JoinToken, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	t, ok := f.state.JoinTokens[id]
	if !ok {
		return JoinToken{}, false
	}
	return *t, true
}

// JoinTokens returns the unused join tokens, by id.
func (f *FSM) JoinTokens() []JoinToken {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]JoinToken, 0, len(f.state.JoinTokens))
	for _, t := range f.state.JoinTokens {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b JoinToken) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Dispatch returns a copy of a dispatch record.
func (f *FSM) Dispatch(id string) (Dispatch, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	d, ok := f.state.Dispatches[id]
	if !ok {
		return Dispatch{}, false
	}
	return *d, true
}

// OpenDispatches returns the dispatches of a node that have no result yet, in
// the order they were made: what a server pushes when the node's session
// (re)starts.
func (f *FSM) OpenDispatches(node string) []Dispatch {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Dispatch
	for id := range f.idx.open[node] {
		out = append(out, *f.state.Dispatches[id])
	}
	slices.SortFunc(out, func(a, b Dispatch) int { return cmp.Compare(a.Fence, b.Fence) })
	return out
}

func (n *Node) clone() Node {
	c := *n
	c.Labels = maps.Clone(n.Labels)
	c.TokenLabels = maps.Clone(n.TokenLabels)
	c.Tools = maps.Clone(n.Tools)
	c.Tiers = slices.Clone(n.Tiers)
	return c
}
