package fsm

import "time"

// applyTick expires intents whose time is up, ends the waits for a node that
// are over, and forgets what has passed its
// retention. The work is ordered by the indexes, so a tick costs what is due,
// not what is stored.
func (f *FSM) applyTick(index uint64, at time.Time) []string {
	now := f.advance(at)
	s := f.state
	var changed []string
	for {
		e, ok := f.idx.expiry.due(now)
		if !ok {
			break
		}
		in := s.Intents[e.key]
		if in == nil || Final(in.State) || in.Dispatch != nil || !in.ExpiresAt.Equal(e.at) {
			continue // already final, pruned, or in a node's hands
		}
		f.scheduler().expire(in, index)
		changed = append(changed, in.ID)
	}
	changed = append(changed, f.expireDispatches(index, now)...)
	// Intents whose wait for a node is over: the queue decides, which also
	// dispatches those a node may now take.
	waited := false
	for {
		e, ok := f.idx.waits.due(now)
		if !ok {
			break
		}
		if in := s.Intents[e.key]; in != nil && in.State == StateQueued && in.WaitUntil.Equal(e.at) {
			waited = true
		}
	}
	if f.expireLocks(now) {
		waited = true // what a lock held may now be dispatched
	}
	if waited {
		changed = append(changed, f.scheduler().drainQueue(index)...)
	}
	f.expireOutputs(now)
	for id, tok := range s.JoinTokens { // deleting the expired ones: any order gives the same state
		if !tok.ExpiresAt.After(now) {
			delete(s.JoinTokens, id)
		}
	}
	retention := f.cfg.IdempotencyRetention
	for {
		e, ok := f.idx.idem.due(now.Add(-retention))
		if !ok {
			break
		}
		ent := s.Idempotency[e.key]
		if ent == nil || !ent.At.Equal(e.at) {
			continue
		}
		delete(s.Idempotency, e.key)
		if in := s.Intents[ent.IntentID]; in != nil && Final(in.State) {
			f.forget(in)
		}
	}
	for {
		e, ok := f.idx.rejected.due(now.Add(-retention))
		if !ok {
			break
		}
		if in := s.Intents[e.key]; in != nil && in.Unbound && in.AdmittedAt.Equal(e.at) {
			f.forget(in)
		}
	}
	for {
		e, ok := f.idx.runs.due(now.Add(-retention))
		if !ok {
			break
		}
		if run := s.Runs[e.key]; run != nil && run.LastAt.Equal(e.at) {
			delete(s.Runs, e.key)
		}
	}
	for {
		e, ok := f.idx.nonces.due(now)
		if !ok {
			break
		}
		if until, ok := s.Nonces[e.key]; ok && until.Equal(e.at) {
			delete(s.Nonces, e.key)
		}
	}
	return changed
}

// forget drops a final intent and its dispatch record. A dispatch still open
// (its intent expired or was refused meanwhile) is kept until it closes.
func (f *FSM) forget(in *Intent) {
	delete(f.state.Intents, in.ID)
	f.dropOutput(in.ID)
	f.idx.views.forget(in)
	if in.Dispatch != nil {
		if d := f.state.Dispatches[in.Dispatch.ID]; d != nil && !d.Open {
			delete(f.state.Dispatches, d.ID)
			f.idx.views.dropDispatch(d)
		}
	}
}

// TickDue reports whether a tick at now (or at the state's clock, if that is
// later) would have work: an intent or a dispatch to expire, a wait for a node
// or a lock that ends, or an output, idempotency entry, refused intent, run
// counter, nonce or join token past its retention. Stale index entries count
// as due (the tick then finds nothing), so it never misses work. A tick that
// has no work changes nothing but the state's clock, which every other
// command advances too: the leader proposes none (Server.tick).
func (rd Reader) TickDue(now time.Time) bool {
	f := rd.f
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, x := f.state, f.idx
	if s.Clock.After(now) {
		now = s.Clock
	}
	retention := f.cfg.IdempotencyRetention
	if x.expiry.dueAt(now) || x.deadlines.dueAt(now) || x.waits.dueAt(now) || x.nonces.dueAt(now) ||
		x.outputs.dueAt(now.Add(-f.cfg.OutputRetention)) || x.idem.dueAt(now.Add(-retention)) ||
		x.rejected.dueAt(now.Add(-retention)) || x.runs.dueAt(now.Add(-retention)) {
		return true
	}
	for _, l := range s.Locks {
		if !l.active(now) {
			return true
		}
	}
	for _, tok := range s.JoinTokens {
		if !tok.ExpiresAt.After(now) {
			return true
		}
	}
	return false
}
