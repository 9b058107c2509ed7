package store

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommit puts the writes of concurrent callers in one bbolt
// transaction: one commit, one fsync for all of them. A write that finds no
// commit under way goes at once, alone, so a lone caller waits for nothing
// but its own commit; the writes that arrive while a commit is under way
// queue, and the first of them, once that commit is done, commits them all.
// Every caller returns only once the transaction holding its write is
// durable (or was rolled back, with the error).
//
// A write is a function of the transaction, as for bolt's DB.Update. It MUST
// be safe to call more than once: when one write of a group fails, the
// group's transaction is rolled back, that write is run again alone (its
// caller gets that run's outcome), and the others are run again together.
// The writes of one group run in the order they arrived, each seeing what
// the ones before it wrote, as separate transactions one after the other
// would; a failed one's neighbours keep that order (commit).
type groupCommit struct {
	db *bolt.DB

	mu      sync.Mutex
	pending []*write
	leading bool // a caller is committing; the next group waits for it

	// commits counts the transactions committed or rolled back (tests).
	commits int64
}

type write struct {
	fn   func(*bolt.Tx) error
	err  error
	lead bool          // woken to commit the next group, not with a result
	wake chan struct{} // buffered: whoever wakes it never waits
}

// update runs fn in a durable read-write transaction shared with the writes
// of concurrent callers, and returns fn's error or the commit's.
func (g *groupCommit) update(fn func(*bolt.Tx) error) error {
	w := &write{fn: fn, wake: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	if g.leading {
		g.mu.Unlock()
		<-w.wake
		if !w.lead {
			return w.err
		}
		g.mu.Lock()
	}
	g.leading = true
	group := g.pending
	g.pending = nil
	g.mu.Unlock()

	g.commit(group, w)

	g.mu.Lock()
	if len(g.pending) > 0 {
		next := g.pending[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return w.err
}

// commit runs group in one transaction and tells every caller but self its
// outcome. When a write fails, the transaction is rolled back; the writes
// that arrived before it commit first (together, again), then it runs
// alone, then the rest: the writes keep the order they arrived in.
func (g *groupCommit) commit(group []*write, self *write) {
	done := func(w *write, err error) {
		w.err = err
		if w != self {
			w.wake <- struct{}{}
		}
	}
	for len(group) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			for i, w := range group {
				if err := w.fn(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		g.counted()
		if failed < 0 || len(group) == 1 {
			for _, w := range group {
				done(w, err) // committed, or the commit itself failed
			}
			return
		}
		if failed > 0 {
			g.commit(group[:failed], self)
		}
		w := group[failed]
		err = g.db.Update(w.fn)
		g.counted()
		done(w, err)
		group = group[failed+1:]
	}
}

func (g *groupCommit) counted() {
	g.mu.Lock()
	g.commits++
	g.mu.Unlock()
}

// commitCount returns how many transactions the store has run for writes.
func (g *groupCommit) commitCount() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.commits
}
