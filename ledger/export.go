package ledger

import (
	"fmt"
)

// Export builds a Bundle of the receipts with indexes [from, to), each proved
// against the latest checkpoint. Older signed checkpoints (for example the ones
// a watcher saw before) may be given in increasing order of size; the bundle
// then chains them to the latest with consistency proofs, each checked against
// this log first. The log must be configured with its verifier key, which the
// bundle names.
func (l *Log) Export(from, to int64, older ...[]byte) (*Bundle, error) {
	if l.cfg.VerifierKey == "" {
		return nil, fmt.Errorf("ledger: export needs Config.VerifierKey")
	}
	latest := l.latest.Load()
	if latest == nil {
		return nil, fmt.Errorf("%w: no checkpoint has been published", ErrNotFound)
	}
	if from < 0 || from > to || to > latest.cp.Size {
		return nil, fmt.Errorf("%w: receipts [%d, %d), latest checkpoint size %d", ErrIndexOutOfRange, from, to, latest.cp.Size)
	}
	b := &Bundle{VerifierKey: l.cfg.VerifierKey}
	var prev *Checkpoint
	for i, signed := range append(older, latest.note) {
		c, err := l.openCheckpoint(signed)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %d: %w", i, err)
		}
		if err := l.checkTree(c); err != nil {
			return nil, fmt.Errorf("%w: checkpoint %d: %v", ErrInconsistent, i, err)
		}
		if prev != nil {
			if c.Size < prev.Size {
				return nil, fmt.Errorf("%w: checkpoint %d has size %d after %d", ErrRollback, i, c.Size, prev.Size)
			}
			p, err := l.ConsistencyProof(prev.Size, c.Size)
			if err != nil {
				return nil, err
			}
			b.Consistency = append(b.Consistency, p)
		}
		b.Checkpoints = append(b.Checkpoints, string(signed))
		prev = &c
	}
	for i := from; i < to; i++ {
		rp, err := l.proveAgainst(latest, i)
		if err != nil {
			return nil, err
		}
		b.Receipts = append(b.Receipts, *rp)
	}
	return b, nil
}
