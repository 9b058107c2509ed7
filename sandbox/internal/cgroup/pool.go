package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Why a pool: making a group costs a mkdir and limit writes in each
// hierarchy, and removing it an rmdir in each, on the path of every run.
// The pool keeps a few groups made and limited ahead of time, in the
// background after a run ends, so that a run only moves its process in
// (on v2 not even that: it is cloned into the group). A pooled group is
// fresh — made for one run, nothing ever ran in it, checked empty when
// taken — and it is removed after that run, never handed out twice.
const (
	poolPerKey = 2 // groups kept ready for one set of limits
	poolKeys   = 4 // sets of limits kept ready, the most recently used
)

type pool struct {
	mu      sync.Mutex
	ready   map[Limits][]*Group
	keys    []Limits // most recently used last
	filling map[Limits]bool
	closed  bool
}

// background counts removals and refills under way, for Manager.Close.
var background sync.WaitGroup

// Take returns a new, empty group with limits l for one run: one made ahead
// of time when there is one, else one made now. The caller MUST Close it
// after the run; it is never handed out again. Errors are those of making
// a group (ErrNoController for a limit the host cannot set).
func (m *Manager) Take(l Limits) (*Group, error) {
	for {
		g := m.pool.take(l)
		if g == nil {
			break
		}
		if g.empty() {
			g.mgr = m
			return g, nil
		}
		// A process got into a group only this manager knows of: never use
		// it, and do not let its removal refill the pool.
		g.Close()
	}
	g, err := m.create(Name(), l)
	if err != nil {
		return nil, err
	}
	g.mgr = m
	return g, nil
}

func (p *pool) take(l Limits) *Group {
	p.mu.Lock()
	evicted := p.touch(l)
	var g *Group
	if gs := p.ready[l]; len(gs) > 0 {
		g = gs[len(gs)-1]
		p.ready[l] = gs[:len(gs)-1]
	}
	p.mu.Unlock()
	for _, e := range evicted {
		e.discard()
	}
	return g
}

// touch makes l the most recently used set of limits and returns the
// groups of the sets that fell out of the pool. Called with p.mu held.
func (p *pool) touch(l Limits) (evicted []*Group) {
	if i := slices.Index(p.keys, l); i >= 0 {
		p.keys = slices.Delete(p.keys, i, i+1)
	}
	p.keys = append(p.keys, l)
	for len(p.keys) > poolKeys {
		old := p.keys[0]
		p.keys = p.keys[1:]
		evicted = append(evicted, p.ready[old]...)
		delete(p.ready, old)
	}
	return evicted
}

// refill makes groups with limits l until poolPerKey are ready. It runs in
// the background, after a run with those limits ended.
func (m *Manager) refill(l Limits) {
	p := &m.pool
	p.mu.Lock()
	if p.closed || p.filling[l] || !slices.Contains(p.keys, l) {
		p.mu.Unlock()
		return
	}
	if p.filling == nil {
		p.filling, p.ready = map[Limits]bool{}, map[Limits][]*Group{}
	}
	p.filling[l] = true
	n := poolPerKey - len(p.ready[l])
	p.mu.Unlock()
	for i := 0; i < n; i++ {
		g, err := m.create(Name(), l)
		if err != nil {
			break
		}
		p.mu.Lock()
		keep := !p.closed && slices.Contains(p.keys, l)
		if keep {
			p.ready[l] = append(p.ready[l], g)
		}
		p.mu.Unlock()
		if !keep {
			g.discard()
			break
		}
	}
	p.mu.Lock()
	delete(p.filling, l)
	p.mu.Unlock()
}

// Close removes the groups made ahead of time and waits until the
// removals and refills under way are done; the manager makes no more ahead
// of time. Groups taken and not closed yet are still their caller's.
func (m *Manager) Close() {
	p := &m.pool
	p.mu.Lock()
	p.closed = true
	var gs []*Group
	for _, ready := range p.ready {
		gs = append(gs, ready...)
	}
	p.ready, p.keys = nil, nil
	p.mu.Unlock()
	for _, g := range gs {
		g.discard()
	}
	background.Wait()
}

// empty reports whether no process is in the group (and it still exists).
func (g *Group) empty() bool {
	if len(g.dirs) == 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(g.dirs[0], "cgroup.procs"))
	return err == nil && strings.TrimSpace(string(b)) == ""
}
