package fsm

import (
	"cmp"
	"maps"
	"slices"
)

// Node returns a copy of a node's record.
func (rd Reader) Node(id string) (Node, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	n, ok := rd.f.state.Nodes[id]
	if !ok {
		return Node{}, false
	}
	return n.clone(), true
}

// Nodes returns every enrolled node, by id.
func (rd Reader) Nodes() []Node {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := make([]Node, 0, len(rd.f.state.Nodes))
	for _, id := range sortedKeys(rd.f.state.Nodes) {
		out = append(out, rd.f.state.Nodes[id].clone())
	}
	return out
}

// HeldBy returns the ids of the nodes recorded as not down with their
// session on server, in no order: one pass over the nodes, copying nothing
// else, as a server checks it every heartbeat.
func (rd Reader) HeldBy(server string) []string {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	var out []string
	for id, n := range rd.f.state.Nodes {
		if n.Server == server && n.Status != NodeDown {
			out = append(out, id)
		}
	}
	return out
}

// JoinToken returns an unused join token.
func (rd Reader) JoinToken(id string) (JoinToken, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	t, ok := rd.f.state.JoinTokens[id]
	if !ok {
		return JoinToken{}, false
	}
	return *t, true
}

// JoinTokens returns the unused join tokens, by id.
func (rd Reader) JoinTokens() []JoinToken {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	out := make([]JoinToken, 0, len(rd.f.state.JoinTokens))
	for _, t := range rd.f.state.JoinTokens {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b JoinToken) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Dispatch returns a copy of a dispatch record.
func (rd Reader) Dispatch(id string) (Dispatch, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	d, ok := rd.f.state.Dispatches[id]
	if !ok {
		return Dispatch{}, false
	}
	return *d, true
}

// OpenDispatches returns the dispatches of a node that have no result yet, in
// the order they were made: what a server pushes when the node's session
// (re)starts.
func (rd Reader) OpenDispatches(node string) []Dispatch {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	var out []Dispatch
	for id := range rd.f.idx.open[node] {
		out = append(out, *rd.f.state.Dispatches[id])
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
