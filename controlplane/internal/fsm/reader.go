package fsm

// Reader is the FSM's read side: the lookups, listings and views that the
// API, the dashboard and the node sessions read. Its methods take the FSM's
// read lock (or read what is kept atomically), never change the state, and
// may be called from any goroutine while Raft applies entries. The apply
// side (Apply, the command handlers, Snapshot and Restore) is FSM's. The
// zero Reader is not usable: obtain one with FSM.Reader.
type Reader struct{ f *FSM }

// Reader returns the FSM's read side. It stays valid across Restore.
func (f *FSM) Reader() Reader { return Reader{f} }
