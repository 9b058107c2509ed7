package fsm

import (
	"time"

	"github.com/writhq/writ/protocol"
)

// PutOutput stores the captured output of a node's result beside its intent.
// The server that received it checked it against the signed result's
// captured_hash and captured_bytes before proposing, and proposes it before
// the result (MsgResult), so that an intent is never final without the
// output it will have. The receipt and the ledger never hold it: they hold
// the signed hashes only.
type PutOutput struct {
	At         time.Time `json:"at"`
	DispatchID string    `json:"dispatch_id"`
	IntentID   string    `json:"intent_id"`
	Node       string    `json:"node"`
	// Hash is the result's captured_hash: the hash of Output.
	Hash   string `json:"hash"`
	Output []byte `json:"output"`
}

// MsgPutOutput carries a captured output.
const MsgPutOutput MsgType = 37

// Output is a captured output the FSM keeps, by intent id, until its
// retention passes, the output table needs its room, or its intent is
// forgotten. Data is never modified once stored.
type Output struct {
	DispatchID string    `json:"dispatch_id"`
	Hash       string    `json:"hash"`
	Data       []byte    `json:"data"`
	At         time.Time `json:"at"`
}

// applyOutput keeps a dispatch's captured output, evicting the oldest
// outputs past Config.OutputMaxBytes. A dispatch that already has a result
// keeps what it has (a node resending after a lost acknowledgement); an
// output over the whole budget, or with retention off, is not kept. Only
// the dispatch's own node can put an output for it.
func (f *FSM) applyOutput(c *PutOutput) Result {
	now := f.advance(c.At)
	s := f.state
	d := s.Dispatches[c.DispatchID]
	switch {
	case d == nil:
		return refuse(protocol.CodeNotFound, "no dispatch %q", c.DispatchID)
	case d.Node != c.Node || d.IntentID != c.IntentID:
		return refuse(protocol.CodeWrongNode, "dispatch %q went to another node or intent", c.DispatchID)
	case d.Result != nil:
		return Result{IntentID: d.IntentID, Duplicate: true}
	case s.Intents[d.IntentID] == nil:
		return refuse(protocol.CodeNotFound, "intent %q is no longer kept", d.IntentID)
	}
	if f.cfg.OutputRetention <= 0 || int64(len(c.Output)) > f.cfg.OutputMaxBytes {
		return Result{IntentID: d.IntentID}
	}
	f.dropOutput(d.IntentID)
	s.Outputs[d.IntentID] = &Output{DispatchID: d.ID, Hash: c.Hash, Data: c.Output, At: now}
	f.idx.outputs.add(now, d.IntentID)
	f.idx.outputBytes += int64(len(c.Output))
	for f.idx.outputBytes > f.cfg.OutputMaxBytes {
		e, ok := f.idx.outputs.due(latest)
		if !ok {
			break
		}
		if o := s.Outputs[e.key]; o != nil && o.At.Equal(e.at) {
			f.dropOutput(e.key)
		}
	}
	return Result{IntentID: d.IntentID}
}

// latest is later than any entry's time: due(latest) pops the oldest.
var latest = time.Unix(1<<62, 0)

// expireOutputs drops the outputs stored more than OutputRetention ago.
func (f *FSM) expireOutputs(now time.Time) {
	for {
		e, ok := f.idx.outputs.due(now.Add(-f.cfg.OutputRetention))
		if !ok {
			return
		}
		if o := f.state.Outputs[e.key]; o != nil && o.At.Equal(e.at) {
			f.dropOutput(e.key)
		}
	}
}

// dropOutput forgets the output of an intent, if it has one. Its entry in
// the age index goes stale and is skipped when it comes due.
func (f *FSM) dropOutput(intentID string) {
	if o := f.state.Outputs[intentID]; o != nil {
		f.idx.outputBytes -= int64(len(o.Data))
		delete(f.state.Outputs, intentID)
	}
}

// IntentOutput returns the stored output of an intent, if the FSM still
// keeps it. The caller MUST check that the reader is entitled to the
// intent's tenant, and should check the output against the intent's signed
// result (Output.Hash is the captured_hash it was stored under).
func (rd Reader) IntentOutput(intentID string) (Output, bool) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	o := rd.f.state.Outputs[intentID]
	if o == nil {
		return Output{}, false
	}
	return *o, true
}

// OutputUsage returns how many outputs the FSM keeps and their total size.
func (rd Reader) OutputUsage() (count int, bytes int64) {
	rd.f.mu.RLock()
	defer rd.f.mu.RUnlock()
	return len(rd.f.state.Outputs), rd.f.idx.outputBytes
}
