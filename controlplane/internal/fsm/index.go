package fsm

import (
	"container/heap"
	"sort"
	"time"
)

// timedKey orders work by time, then by key, so that equal times still give one
// order on every replica.
type timedKey struct {
	at  time.Time
	key string
}

type timedHeap []timedKey

func (h timedHeap) Len() int { return len(h) }
func (h timedHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].key < h[j].key
}
func (h timedHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timedHeap) Push(x any)   { *h = append(*h, x.(timedKey)) }
func (h *timedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *timedHeap) add(at time.Time, key string) { heap.Push(h, timedKey{at, key}) }

// due pops and returns the next entry at or before now, if any.
func (h *timedHeap) due(now time.Time) (timedKey, bool) {
	if h.Len() == 0 || (*h)[0].at.After(now) {
		return timedKey{}, false
	}
	return heap.Pop(h).(timedKey), true
}

// dueAt reports whether an entry is at or before now, without popping it.
func (h timedHeap) dueAt(now time.Time) bool { return len(h) > 0 && !h[0].at.After(now) }

// indexes order the state's time-driven work so that a tick touches only what
// is due. They are derived from the state and rebuilt after a restore; entries
// may be stale and are checked against the state when they come due.
type indexes struct {
	expiry timedHeap // non-final intents by expires_at
	idem   timedHeap // idempotency entries by admission time
	runs   timedHeap // run counters by last use
	nonces timedHeap // consumed nonces by when they may be forgotten
	// rejected holds intents refused before a decision (Unbound), which bind
	// no idempotency key, by admission time.
	rejected timedHeap
	// deadlines holds open dispatches by the time their node must report.
	deadlines timedHeap
	// waits holds queued intents with no eligible node by when their wait
	// for one ends (Intent.WaitUntil).
	waits timedHeap
	// outputs holds stored outputs by when they were stored, oldest first;
	// outputBytes is their total size.
	outputs     timedHeap
	outputBytes int64
	// open holds the ids of each node's open dispatches, so that a server
	// pushing a node's work reads that node's, not every dispatch.
	open map[string]map[string]bool
	// views serve the dashboard's queries.
	views *views
	// names holds the ids of the nodes of each name, for intents that
	// target a node by name (nodes are never removed).
	names map[string][]string
	// sched orders the ready nodes of each tool for the scheduler.
	sched *schedIndex
}

func (x *indexes) opened(node, id string) {
	if x.open[node] == nil {
		x.open[node] = map[string]bool{}
	}
	x.open[node][id] = true
}

func (x *indexes) closed(node, id string) {
	delete(x.open[node], id)
	if len(x.open[node]) == 0 {
		delete(x.open, node)
	}
}

func buildIndexes(s *State) *indexes {
	x := &indexes{open: map[string]map[string]bool{}, views: buildViews(s), names: map[string][]string{}, sched: buildSched(s)}
	for _, id := range sortedKeys(s.Nodes) {
		n := s.Nodes[id]
		x.names[n.Name] = append(x.names[n.Name], id)
	}
	for _, id := range sortedKeys(s.Intents) {
		in := s.Intents[id]
		if !Final(in.State) {
			x.expiry = append(x.expiry, timedKey{in.ExpiresAt, id})
		}
		if in.Unbound {
			x.rejected = append(x.rejected, timedKey{in.AdmittedAt, id})
		}
		if in.State == StateQueued && !in.WaitUntil.IsZero() {
			x.waits = append(x.waits, timedKey{in.WaitUntil, id})
		}
	}
	for _, k := range sortedKeys(s.Idempotency) {
		x.idem = append(x.idem, timedKey{s.Idempotency[k].At, k})
	}
	for _, k := range sortedKeys(s.Nonces) {
		x.nonces = append(x.nonces, timedKey{s.Nonces[k], k})
	}
	for _, k := range sortedKeys(s.Dispatches) {
		if d := s.Dispatches[k]; d.Open {
			x.deadlines = append(x.deadlines, timedKey{d.Deadline, k})
			x.opened(d.Node, k)
		}
	}
	for _, k := range sortedKeys(s.Runs) {
		x.runs = append(x.runs, timedKey{s.Runs[k].LastAt, k})
	}
	for _, k := range sortedKeys(s.Outputs) {
		x.outputs = append(x.outputs, timedKey{s.Outputs[k].At, k})
		x.outputBytes += int64(len(s.Outputs[k].Data))
	}
	for _, h := range []*timedHeap{&x.expiry, &x.idem, &x.runs, &x.nonces, &x.rejected, &x.deadlines, &x.waits, &x.outputs} {
		heap.Init(h)
	}
	return x
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedUnique(ids []string) []string {
	if len(ids) < 2 {
		return ids
	}
	out := append([]string(nil), ids...)
	sort.Strings(out)
	j := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[j-1] {
			out[j] = out[i]
			j++
		}
	}
	return out[:j]
}
