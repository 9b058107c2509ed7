package fsm

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// Snapshot encodes the state while Apply waits, so that Persist can write it
// while Apply goes on. Encoding is proportional to the state; the state is kept
// small by pruning (idempotency retention), not by the snapshot.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.state)
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return snapshot(b), nil
}

// Restore replaces the state with a snapshot's and rebuilds the indexes.
func (f *FSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	s := newState()
	if err := json.NewDecoder(r).Decode(s); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.mu.Lock()
	f.state = s
	f.idx = buildIndexes(s)
	f.mu.Unlock()
	f.watch.notifyAll()
	return nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}

// Encode returns the state as a snapshot would hold it: equal states give equal
// bytes, which is how tests compare replicas.
func (f *FSM) Encode() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return json.Marshal(f.state)
}
