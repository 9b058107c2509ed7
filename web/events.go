package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// Change names something the control plane changed: an intent, a node or
// the ledger's checkpoint (Kind "intent", "node", "checkpoint").
type Change struct {
	Kind string
	ID   string
}

// Event is one message of /v1/events. Seq numbers the events of one epoch (a
// server's run) without gaps; a client resumes with the last Seq it saw.
type Event struct {
	Seq   uint64 `json:"seq"`
	Epoch string `json:"epoch"`
	// Type is intent, node, checkpoint, or reset: reload, events were lost.
	Type  string `json:"type"`
	Index uint64 `json:"index,omitempty"` // the Raft index that made it
	ID    string `json:"id,omitempty"`
	// Tenant is the intent's, and Page the page that shows it: what a
	// client must be allowed to view to receive the event.
	Tenant     string         `json:"tenant,omitempty"`
	Page       string         `json:"-"`
	Intent     *IntentSummary `json:"intent,omitempty"`
	Node       *Node          `json:"node,omitempty"`
	Checkpoint *Checkpoint    `json:"checkpoint,omitempty"`

	// The JSON sent, encoded once for every client, and only when a client
	// needs it: a busy server with no one watching encodes nothing.
	json *lazyJSON
}

type lazyJSON struct {
	once sync.Once
	data []byte
}

// bytes returns the event's JSON.
func (ev *Event) bytes() []byte {
	if ev.json == nil {
		b, _ := json.Marshal(ev)
		return b
	}
	ev.json.once.Do(func() { ev.json.data, _ = json.Marshal(ev) })
	return ev.json.data
}

// hub turns changes into events, keeps the last ones in a ring for clients
// that resume, and fans them out to subscribers through bounded queues.
// Nothing in it ever waits for a client. With no subscriber and no page
// served for idleAfter, it makes no events: it marks a gap in the ring once,
// so that a client resuming from before it reloads, and drops changes until
// someone watches again.
type hub struct {
	b       Backend
	fleet   Fleet
	epoch   string
	in      chan batch
	lost    atomic.Bool // a batch was dropped: tell everyone to reload
	queue   int
	done    chan struct{}
	exited  chan struct{} // closed when run has returned
	stopped sync.Once

	mu   sync.Mutex
	seq  uint64
	ring []*Event // the last len(ring) events; ring[seq % len] holds seq, nil for a gap
	subs map[*subscriber]struct{}
	// watched is when a subscriber last left or a position was last asked
	// for; idle is set while changes are dropped.
	watched   time.Time
	idleAfter time.Duration
	idle      bool
}

type batch struct {
	index   uint64
	changes []Change
	reset   bool
}

// subscriber is one client's queue. closed is closed when the hub drops it.
type subscriber struct {
	ch     chan *Event
	closed chan struct{}
	once   sync.Once
}

func (s *subscriber) drop() { s.once.Do(func() { close(s.closed) }) }

func newHub(b Backend, buffer, queue, changes int, idleAfter time.Duration) *hub {
	e := make([]byte, 8)
	rand.Read(e)
	h := &hub{b: b, epoch: hex.EncodeToString(e), in: make(chan batch, changes), queue: queue,
		done: make(chan struct{}), exited: make(chan struct{}), ring: make([]*Event, buffer), subs: map[*subscriber]struct{}{},
		idleAfter: idleAfter} // idle until watched: no client can resume in a new epoch
	h.fleet, _ = b.(Fleet)
	go h.run()
	return h
}

// changed hands a batch to the hub without waiting: when the hub is behind,
// the batch is dropped and clients are told to reload.
func (h *hub) changed(index uint64, changes []Change, reset bool) {
	select {
	case h.in <- batch{index, changes, reset}:
	default:
		h.lost.Store(true)
	}
}

// stop ends the hub and waits until it no longer reads batches.
func (h *hub) stop() {
	h.stopped.Do(func() { close(h.done) })
	<-h.exited
}

func (h *hub) run() {
	defer close(h.exited)
	for {
		select {
		case <-h.done:
			h.mu.Lock()
			for s := range h.subs {
				s.drop()
			}
			h.mu.Unlock()
			return
		case bt := <-h.in:
			if h.unwatched() {
				continue
			}
			if h.lost.Swap(false) || bt.reset {
				h.publish(&Event{Type: "reset", Index: bt.index})
			}
			seen := map[Change]bool{}
			for _, c := range bt.changes {
				if !seen[c] {
					seen[c] = true
					if ev := h.event(bt.index, c); ev != nil {
						h.publish(ev)
					}
				}
			}
		}
	}
}

// unwatched reports whether no one has watched for idleAfter; the first time,
// it ends the ring with a gap.
func (h *hub) unwatched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) > 0 || time.Since(h.watched) < h.idleAfter {
		h.idle = false
		return false
	}
	if !h.idle {
		h.idle = true
		h.seq++
		h.ring[h.seq%uint64(len(h.ring))] = nil
	}
	h.lost.Store(false) // the gap stands for whatever was dropped
	return true
}

// event reads the current view of what changed.
func (h *hub) event(index uint64, c Change) *Event {
	switch c.Kind {
	case "intent":
		var s IntentSummary
		if sum, ok := h.b.(Summarizer); ok {
			if s, ok = sum.IntentSummary(c.ID); !ok {
				return nil
			}
		} else {
			d, ok := h.b.Intent(c.ID)
			if !ok {
				return nil
			}
			s = d.IntentSummary
		}
		return &Event{Type: "intent", Index: index, ID: c.ID, Tenant: s.Tenant, Page: "intents", Intent: &s}
	case "node":
		if h.fleet == nil {
			return nil
		}
		n, _, ok := h.fleet.Node(c.ID, 0)
		if !ok {
			return nil
		}
		return &Event{Type: "node", Index: index, ID: c.ID, Page: "fleet", Node: &n}
	case "checkpoint":
		cp, ok := h.b.Checkpoint()
		if !ok {
			return nil
		}
		return &Event{Type: "checkpoint", Index: index, Page: "ledger", Checkpoint: &cp}
	}
	return nil
}

func (h *hub) publish(ev *Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev.Seq, ev.Epoch, ev.json = h.seq, h.epoch, &lazyJSON{}
	h.ring[h.seq%uint64(len(h.ring))] = ev
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			// Too slow: drop it rather than wait; it reconnects and resumes.
			delete(h.subs, s)
			h.watched = time.Now()
			s.drop()
		}
	}
}

// subscribe registers a client that last saw event since of epoch, and
// returns the events it missed, or reset when they are no longer kept (or
// come from another epoch, a restarted server).
func (h *hub) subscribe(epoch string, since uint64) (s *subscriber, backlog []*Event, reset bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s = &subscriber{ch: make(chan *Event, h.queue), closed: make(chan struct{})}
	select {
	case <-h.done:
		s.drop()
		return s, nil, false
	default:
	}
	h.subs[s] = struct{}{}
	if epoch == "" {
		return s, nil, false // a client that wants what happens from now on
	}
	oldest := uint64(1)
	if h.seq > uint64(len(h.ring)) {
		oldest = h.seq - uint64(len(h.ring)) + 1
	}
	if epoch != h.epoch || since > h.seq || since+1 < oldest {
		return s, nil, true
	}
	for q := since + 1; q <= h.seq; q++ {
		ev := h.ring[q%uint64(len(h.ring))]
		if ev == nil {
			return s, nil, true // events were not made while no one watched
		}
		backlog = append(backlog, ev)
	}
	return s, backlog, false
}

// position is the epoch and the last event's number: a page rendered now
// resumes from there. It is also a promise that a client will soon
// subscribe: events are made from then on, so that it does not find a gap.
func (h *hub) position() (string, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.watched = time.Now()
	return h.epoch, h.seq
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.watched = time.Now()
	h.mu.Unlock()
	s.drop()
}
