package controlplane

import (
	"net/http"
	"runtime"
	"sync"
)

// requestCost is what one admission or approval is charged beyond its body's
// bytes: its goroutine, the verifier's and the decision's allocations, the
// command proposed through Raft and its answer (about 8 KiB measured; the
// figure is the budget's unit, not an exact account).
const requestCost = 8 << 10

// admitGate bounds the admissions and approvals in flight twice: by count
// (MaxInFlight) and by cost (MaxInFlightBytes), a request costing its body's
// announced size plus requestCost, so that a few large bodies take the room
// of many small ones. It is taken before the body is read: a request that
// finds it full is answered 429 at once, having cost the server only its
// headers. Nothing waits in it: a queue that grows without bound only turns
// overload into timeouts.
type admitGate struct {
	mu            sync.Mutex
	n, maxN       int
	cost, maxCost int64
}

func newAdmitGate(maxN int, maxCost int64) *admitGate {
	return &admitGate{maxN: maxN, maxCost: maxCost}
}

// enter takes a place of the given cost; false when there is none. A cost
// over the whole budget is admitted only into an empty gate, so that the
// largest body the limits allow can always be served.
func (g *admitGate) enter(cost int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n >= g.maxN || (g.cost+cost > g.maxCost && g.n > 0) {
		return false
	}
	g.n++
	g.cost += cost
	return true
}

func (g *admitGate) leave(cost int64) {
	g.mu.Lock()
	g.n--
	g.cost -= cost
	g.mu.Unlock()
}

// inUse is the count and cost in flight.
func (g *admitGate) inUse() (int, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, g.cost
}

// costOf is a request's charge: its announced body size (the limit when it
// announces none: a chunked body may be that long) plus requestCost.
func costOf(r *http.Request, limit int) int64 {
	n := r.ContentLength
	if n < 0 || n > int64(limit) {
		n = int64(limit)
	}
	return n + requestCost
}

// cpuSlots bounds the requests doing CPU-bound admission work at once —
// verification, canonical JSON, schema and policy — to two per core. A
// request waits for a slot parked, not runnable, so that however many
// requests are in flight, Raft's heartbeats and replication compete with a
// handful of busy goroutines rather than a thousand. Waits are short and
// bounded by the admitGate: only requests inside it take slots.
type cpuSlots chan struct{}

func newCPUSlots() cpuSlots { return make(cpuSlots, 2*runtime.GOMAXPROCS(0)) }

// do runs f holding a slot.
func (c cpuSlots) do(f func()) {
	c <- struct{}{}
	defer func() { <-c }()
	f()
}
