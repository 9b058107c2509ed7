package fsm

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/raft"
)

// encodeState encodes the state as snapshots hold it: encoding/json/v2 (which
// keeps canonical raw values as they are, where encoding/json would escape
// <, > and &), map members sorted, so that equal states give equal bytes.
func encodeState(s *State) ([]byte, error) { return json.Marshal(s, stateOptions) }

// stateOptions encode and decode a snapshot's state. The encoder does not
// look for duplicate member names, about a tenth of the encoding
// (BenchmarkEncodeState): the state's own members are Go fields and sorted map
// keys, and the raw values it holds (intents, approvals, results) are
// canonical JSON, whose names are unique. The bytes are the ones a checking
// encoder writes for every state it accepts (TestEncodeStateUnchecked), and
// Restore reads what Snapshot writes.
var stateOptions = json.JoinOptions(json.Deterministic(true), jsontext.AllowDuplicateNames(true))

// A snapshot is the state as one line of JSON, then every receipt of the
// ledger up to the state's count, each as a 4-byte big-endian length and the
// leaf. A replica restoring it on an empty or shorter receipt store appends
// what it lacks, and checks what it already holds.
//
// Snapshot encodes the state while Apply waits; Persist reads the receipts
// while Apply goes on, which the append-only store allows. The snapshot grows
// with the ledger: referring to it instead is future work.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := encodeState(f.state)
	if err != nil {
		return nil, fmt.Errorf("fsm: snapshot: %w", err)
	}
	return &snapshot{state: b, receipts: int64(f.state.Receipts), ledger: f.ledger}, nil
}

// Restore replaces the state with a snapshot's, brings the receipt store up
// to it, and rebuilds the indexes.
func (f *FSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	s := newState()
	if err := json.Unmarshal(line, s, stateOptions); err != nil {
		return fmt.Errorf("fsm: restore: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := int64(0); i < int64(s.Receipts); i++ {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err != nil {
			return fmt.Errorf("fsm: restore: receipt %d: %w", i, err)
		}
		leaf := make([]byte, binary.BigEndian.Uint32(n[:]))
		if _, err := io.ReadFull(br, leaf); err != nil {
			return fmt.Errorf("fsm: restore: receipt %d: %w", i, err)
		}
		if f.ledger != nil {
			f.recorder().putLeaf(i, leaf)
		}
	}
	upgradeQueue(s)
	f.state = s
	f.applied = s.Index
	f.idx = buildIndexes(s)
	f.countQueued()
	defer f.tellNode("")
	defer f.obs.tell(s.Index, nil, true)
	defer f.watch.notifyAll()
	return nil
}

type snapshot struct {
	state    []byte
	receipts int64
	ledger   Ledger
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.persist(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) persist(w io.Writer) error {
	// A store that defers its fsyncs is synced first, so that after a
	// restart it holds at least the snapshot's receipts and restoring only
	// compares them.
	if sy, ok := s.ledger.(interface{ Sync() error }); ok {
		if err := sy.Sync(); err != nil {
			return fmt.Errorf("fsm: snapshot: %w", err)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(s.state)
	bw.WriteByte('\n')
	for i := int64(0); i < s.receipts && s.ledger != nil; i++ {
		leaf, err := s.ledger.Leaf(i)
		if err != nil {
			return fmt.Errorf("fsm: snapshot: receipt %d: %w", i, err)
		}
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(leaf)))
		bw.Write(n[:])
		bw.Write(leaf)
	}
	return bw.Flush()
}

func (*snapshot) Release() {}

// Encode returns the state as a snapshot holds it: equal states give equal
// bytes, which is how tests compare replicas.
func (f *FSM) Encode() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return encodeState(f.state)
}
