package fsm

import (
	"fmt"
	"strings"

	"github.com/hashicorp/raft"
)

var _ raft.BatchingFSM = (*FSM)(nil)

// leafBatch holds the receipts of the entries of one ApplyBatch until they
// are appended to the ledger together: one write and one fsync for the batch
// instead of one per receipt. Only Raft's FSM goroutine touches it.
type leafBatch struct {
	on     bool
	leaves [][]byte
}

// ApplyBatch applies committed entries in order, exactly as Apply would one
// by one, and appends their receipts to the ledger in one write before any
// waiter is woken. The Raft log, not the ledger, is what makes an entry
// durable: a crash before the write replays the entries and appends the
// receipts then.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	var changed []string
	type told struct {
		index   uint64
		changed []string
	}
	var tell []told
	before := f.receiptCount()
	f.batch.on = true
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		if len(l.Data) == 0 {
			panic(fmt.Sprintf("fsm: empty command at index %d", l.Index))
		}
		res, ch := f.applyLocked(l)
		out[i] = res
		changed = append(changed, ch...)
		tell = append(tell, told{l.Index, ch})
	}
	f.recorder().flushLeaves()
	f.batch.on = false
	f.mu.Lock()
	f.applied = f.state.Index
	f.countQueued()
	f.mu.Unlock()
	for _, id := range changed {
		f.watch.notify(id)
		if node, ok := strings.CutPrefix(id, nodeWatchPrefix); ok {
			f.tellNode(node)
		}
	}
	if f.receiptCount() != before {
		f.watch.notify(ReceiptsWatch)
	}
	if f.checkpointed {
		f.checkpointed = false
		f.watch.notify(CheckpointWatch)
		if len(tell) > 0 {
			last := &tell[len(tell)-1]
			last.changed = append(last.changed, CheckpointWatch)
		}
	}
	// The dashboard's observer hears of each entry, in order, as from Apply.
	for _, t := range tell {
		f.obs.tell(t.index, t.changed, false)
	}
	f.watch.notify(indexWatch)
	return out
}

// ledgerSize is the ledger's size counting the leaves of the batch.
func (rr recorder) ledgerSize() int64 { return rr.f.ledger.Size() + int64(len(rr.f.batch.leaves)) }

// appendLeaf appends now, or at the end of the batch.
func (rr recorder) appendLeaf(index int64, leaf []byte) {
	if rr.f.batch.on {
		rr.f.batch.leaves = append(rr.f.batch.leaves, leaf)
		return
	}
	if err := rr.f.untilSpace("append a receipt", func() error { _, err := rr.f.ledger.Append(leaf); return err }); err != nil {
		panic(fmt.Sprintf("fsm: appending receipt %d: %v", index, err))
	}
}

// flushLeaves appends the batch's receipts. A checkpoint entry flushes first,
// so that it is checked against every receipt before it.
func (rr recorder) flushLeaves() {
	if len(rr.f.batch.leaves) == 0 {
		return
	}
	first := rr.f.ledger.Size()
	err := rr.f.untilSpace("append receipts", func() error { _, err := rr.f.ledger.Append(rr.f.batch.leaves...); return err })
	if err != nil {
		panic(fmt.Sprintf("fsm: appending receipts from %d: %v", first, err))
	}
	rr.f.batch.leaves = rr.f.batch.leaves[:0]
}
