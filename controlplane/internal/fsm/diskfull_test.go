package fsm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/writhq/writ/ledger"
)

// fullDisk is a ledger whose writes fail with err while full is set, as
// writes to a full file system do; tries counts the refused ones.
type fullDisk struct {
	*ledger.Log
	full  atomic.Bool
	err   error
	tries atomic.Int64
	// freeAfter clears full after that many refused writes (0: never).
	freeAfter int64
}

func (l *fullDisk) refuse() error {
	if !l.full.Load() {
		return nil
	}
	if n := l.tries.Add(1); l.freeAfter > 0 && n >= l.freeAfter {
		l.full.Store(false)
	}
	return l.err
}

func (l *fullDisk) Append(leaves ...[]byte) (int64, error) {
	if err := l.refuse(); err != nil {
		return 0, err
	}
	return l.Log.Append(leaves...)
}

func (l *fullDisk) SetCheckpoint(signed []byte) error {
	if err := l.refuse(); err != nil {
		return err
	}
	return l.Log.SetCheckpoint(signed)
}

var errFull = &os.PathError{Op: "write", Path: "ledger/leaves", Err: syscall.ENOSPC}

// TestDiskFullWaits: receipts and a checkpoint that the disk has no space
// for are written once it has, and the ledger ends as a replica's that
// never lacked space; a store that failed an fsync, or any other error,
// still stops the server.
func TestDiskFullWaits(t *testing.T) {
	signer, vkey, err := ledger.NewSigner("writ.test/fsm", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *ledger.Log {
		l, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.Config{VerifierKey: vkey})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	b := receiptLog(t)
	ref := open()
	g := withLedger(t, ref)
	g.ApplyBatch(b.logs)
	root, _ := ref.Root(ref.Size())
	note, err := ledger.SignCheckpoint(ledger.Checkpoint{Origin: signer.Name(), Size: ref.Size(), Root: root}, signer)
	if err != nil {
		t.Fatal(err)
	}
	cp := b.add(MsgPutCheckpoint, PutCheckpoint{Note: note})

	full := &fullDisk{Log: open(), err: errFull, freeAfter: 3}
	f := withLedger(t, full)
	var told atomic.Int64
	f.OnNoSpace(func() { told.Add(1) })
	full.full.Store(true)
	f.ApplyBatch(b.logs[:len(b.logs)-1])
	if full.tries.Load() != 3 || full.Size() != ref.Size() {
		t.Fatalf("receipts: %d refused writes, %d receipts; want 3 and %d", full.tries.Load(), full.Size(), ref.Size())
	}
	if told.Load() != 3 {
		t.Errorf("the server was told of %d waits for space, want 3", told.Load())
	}
	if got, _ := full.Root(full.Size()); got != root {
		t.Error("the ledger written after the disk was full differs from a replica's that never lacked space")
	}
	full.tries.Store(0)
	full.full.Store(true)
	f.Apply(cp)
	if _, latest, ok := full.Latest(); full.tries.Load() != 3 || !ok || string(latest) != string(note) {
		t.Errorf("checkpoint: %d refused writes, stored %v; want 3 and the checkpoint", full.tries.Load(), ok)
	}
	if f.Reader().Index() != cp.Index {
		t.Errorf("index %d after the disk had space again, want %d", f.Reader().Index(), cp.Index)
	}

	for name, e := range map[string]error{
		"fsync failed":  fmt.Errorf("%w: %w", ledger.ErrSyncFailed, errFull),
		"another error": &os.PathError{Op: "write", Path: "ledger/leaves", Err: syscall.EIO},
	} {
		t.Run(name, func(t *testing.T) {
			l := &fullDisk{Log: open(), err: e}
			l.full.Store(true)
			f := withLedger(t, l)
			defer func() {
				if recover() == nil {
					t.Fatalf("the FSM went on after %v", e)
				}
				if l.tries.Load() != 1 {
					t.Errorf("%d tries of a write that failed with %v, want 1", l.tries.Load(), e)
				}
			}()
			f.ApplyBatch(b.logs[:len(b.logs)-1])
		})
	}
	if !noSpace(fmt.Errorf("wrapped: %w", &os.PathError{Op: "write", Err: syscall.EDQUOT})) {
		t.Error("a quota exceeded is not taken for a full disk")
	}
	if noSpace(errors.New("no space left on device")) {
		t.Error("an error that only reads like ENOSPC is taken for one")
	}
}
