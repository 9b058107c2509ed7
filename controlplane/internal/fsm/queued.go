package fsm

// Queued is the number of intents waiting in the queue for a node (state
// queued) as of the last applied entry. It takes no lock: the leader reads
// it on every admission (controlplane's backlog bound).
func (rd Reader) Queued() int { return int(rd.f.queued.Load()) }

// countQueued records the queue's length; f.mu is held.
func (f *FSM) countQueued() { f.queued.Store(int64(len(f.state.Queue))) }
