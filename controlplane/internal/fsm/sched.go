package fsm

import "slices"

// The scheduler's index, so that giving an intent to a node costs O(log n)
// in a fleet with room, not a pass over every node. For each registered tool
// it holds the ready nodes that may run it (the tool's name in their allowlist
// with its manifest hash, its tier among theirs), in levels by dispatches in
// flight, each level in order of node id. An intent goes to the lowest level
// holding a node with a free slot whose labels fit, and within it to the first
// such node from a place chosen by a hash of the intent: the fewest in flight,
// equal loads spread evenly. The index is derived from
// the state, kept in step with every change to a node's status, allowlist,
// tiers or load and to the tools, and rebuilt after a restore.

// toolRing holds the nodes that may run one tool: levels[k] the ids, in
// order, of those with k dispatches in flight, and order the loads that some
// node has, ascending. Only those are kept: a node with a million dispatches
// in flight costs one level, not a million empty ones to pass over.
type toolRing struct {
	levels map[int][]string
	order  []int
}

func (r *toolRing) insert(level int, id string) {
	if r.levels == nil {
		r.levels = map[int][]string{}
	}
	l, ok := r.levels[level]
	if !ok {
		i, _ := slices.BinarySearch(r.order, level)
		r.order = slices.Insert(r.order, i, level)
	}
	if i, found := slices.BinarySearch(l, id); !found {
		r.levels[level] = slices.Insert(l, i, id)
	}
}

func (r *toolRing) delete(level int, id string) {
	l, ok := r.levels[level]
	if !ok {
		return
	}
	if i, found := slices.BinarySearch(l, id); found {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) > 0 {
		r.levels[level] = l
		return
	}
	delete(r.levels, level)
	if i, found := slices.BinarySearch(r.order, level); found {
		r.order = slices.Delete(r.order, i, i+1)
	}
}

// placement records where a node is in the index, so that it can be taken
// out whatever its record says now.
type placement struct {
	level int
	tools []string
}

type schedIndex struct {
	rings map[string]*toolRing // by tool name
	at    map[string]placement // by node id
	// For deciding whether any node could ever run an intent (possible),
	// whatever the nodes' status and load: listing holds, by tool name, the
	// nodes not revoked whose last hello listed it; fresh the nodes not
	// revoked that never said hello; listed the names each node is under.
	listing map[string]map[string]struct{}
	fresh   map[string]struct{}
	listed  map[string][]string
}

func buildSched(s *State) *schedIndex {
	x := &schedIndex{rings: map[string]*toolRing{}, at: map[string]placement{},
		listing: map[string]map[string]struct{}{}, fresh: map[string]struct{}{}, listed: map[string][]string{}}
	for _, n := range s.Nodes {
		x.place(n, s.Tools)
	}
	return x
}

// remove takes a node out of every ring.
func (x *schedIndex) remove(id string) {
	delete(x.fresh, id)
	for _, name := range x.listed[id] {
		delete(x.listing[name], id)
		if len(x.listing[name]) == 0 {
			delete(x.listing, name)
		}
	}
	delete(x.listed, id)
	p, ok := x.at[id]
	if !ok {
		return
	}
	for _, t := range p.tools {
		if r := x.rings[t]; r != nil {
			r.delete(p.level, id)
		}
	}
	delete(x.at, id)
}

// place puts a ready node in the ring of each tool it may run, at the level
// of its load, and any node not revoked in the listing of each tool its last
// hello listed (or among the fresh ones).
func (x *schedIndex) place(n *Node, tools map[string]*Tool) {
	switch {
	case n.Status == NodeRevoked:
	case n.Concurrency == 0:
		x.fresh[n.ID] = struct{}{}
	default:
		for name := range n.Tools {
			if x.listing[name] == nil {
				x.listing[name] = map[string]struct{}{}
			}
			x.listing[name][n.ID] = struct{}{}
			x.listed[n.ID] = append(x.listed[n.ID], name)
		}
	}
	if n.Status != NodeReady {
		return
	}
	p := placement{level: n.InFlight}
	for name, hash := range n.Tools {
		t := tools[name]
		if t == nil || t.Hash != hash || !slices.Contains(n.Tiers, t.Tier) {
			continue
		}
		r := x.rings[name]
		if r == nil {
			r = &toolRing{}
			x.rings[name] = r
		}
		r.insert(p.level, n.ID)
		p.tools = append(p.tools, name)
	}
	x.at[n.ID] = p
}

// reschedule puts a node back in the index after its record changed.
func (sc scheduler) reschedule(n *Node) {
	sc.f.idx.sched.remove(n.ID)
	sc.f.idx.sched.place(n, sc.f.state.Tools)
}

// pickOnRing finds the node for an intent not targeted at a node by id or
// name, and reports whether any ready node may run it at all. In the lowest
// level that has one, it takes the first eligible node with a free slot from
// a place chosen by a hash of the intent id, going round: equal loads are
// spread evenly, and a fleet with room costs O(1) map reads per intent.
func (sc scheduler) pickOnRing(in *Intent, tool *Tool) (*Node, bool) {
	r := sc.f.idx.sched.rings[tool.Name]
	if r == nil {
		return nil, false
	}
	h := mix64(in.ID)
	eligible := false
	for _, load := range r.order {
		level := r.levels[load]
		for j, k := 0, int(h%uint64(max(len(level), 1))); j < len(level); j++ {
			n := sc.f.state.Nodes[level[(k+j)%len(level)]]
			if n == nil || !sc.eligible(n, in, tool) {
				continue
			}
			eligible = true
			if n.InFlight < n.Concurrency {
				return n, true
			}
		}
	}
	return nil, eligible
}

// mix64 hashes a string to 64 well-mixed bits: FNV-1a, then a finalizer so
// that strings differing in their last character land far apart.
func mix64(s string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// targetBefore orders the candidates of an intent targeted at a node by id or
// name: fewer in flight, then a hash of intent and node, then the lower id.
func targetBefore(in *Intent, a, b *Node) bool {
	if a.InFlight != b.InFlight {
		return a.InFlight < b.InFlight
	}
	ha, hb := mix64(in.ID+"\x00"+a.ID), mix64(in.ID+"\x00"+b.ID)
	if ha != hb {
		return ha < hb
	}
	return a.ID < b.ID
}
