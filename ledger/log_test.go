package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/writhq/writ/ledger"
)

// A replica appends the same leaves and takes the leader's checkpoints.
func TestReplicaSetCheckpoint(t *testing.T) {
	t.Parallel()
	leader := newFixture(t, "writ.test/a", 12)
	replica, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.Config{VerifierKey: leader.vkey})
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.SetCheckpoint(leader.signed); !errors.Is(err, ledger.ErrIndexOutOfRange) {
		t.Errorf("checkpoint ahead of the replica: got %v, want ErrIndexOutOfRange", err)
	}
	for i := range 12 {
		if _, err := replica.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := replica.SetCheckpoint(leader.signed); err != nil {
		t.Fatalf("leader's checkpoint on a caught-up replica: %v", err)
	}
	rp, err := replica.ProveReceipt(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.VerifyReceipt(leader.v, rp); err != nil {
		t.Errorf("receipt served by the replica: %v", err)
	}
	// The leader moves on; an older checkpoint is then a rollback.
	older := leader.signed
	if _, err := leader.log.Append(receipt(12)); err != nil {
		t.Fatal(err)
	}
	newer, err := leader.log.Publish(leader.signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Append(receipt(12)); err != nil {
		t.Fatal(err)
	}
	if err := replica.SetCheckpoint(newer); err != nil {
		t.Fatal(err)
	}
	if err := replica.SetCheckpoint(older); !errors.Is(err, ledger.ErrRollback) {
		t.Errorf("older checkpoint after a newer one: got %v, want ErrRollback", err)
	}
	// A replica whose leaf 13 differs disagrees with the next checkpoint and stops serving.
	if _, err := leader.log.Append(receipt(13)); err != nil {
		t.Fatal(err)
	}
	next, err := leader.log.Publish(leader.signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Append(receipt(99)); err != nil {
		t.Fatal(err)
	}
	if err := replica.SetCheckpoint(next); !errors.Is(err, ledger.ErrCheckpointMismatch) {
		t.Fatalf("diverged replica: got %v, want ErrCheckpointMismatch", err)
	}
	if _, err := replica.ProveReceipt(3); !errors.Is(err, ledger.ErrCorrupt) {
		t.Errorf("diverged replica still serves: got %v, want ErrCorrupt", err)
	}
}

func TestProveReceiptBounds(t *testing.T) {
	t.Parallel()
	l, err := ledger.Open(context.Background(), ledger.NewMemStore(), ledger.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(receipt(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ProveReceipt(0); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("before any checkpoint: got %v, want ErrNotFound", err)
	}
	f := newFixture(t, "writ.test/a", 5)
	if _, err := f.log.Append(receipt(5)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.log.ProveReceipt(5); !errors.Is(err, ledger.ErrIndexOutOfRange) {
		t.Errorf("leaf newer than the checkpoint: got %v, want ErrIndexOutOfRange", err)
	}
	if _, err := f.log.ConsistencyProof(3, 7); !errors.Is(err, ledger.ErrIndexOutOfRange) {
		t.Errorf("consistency past the log: got %v, want ErrIndexOutOfRange", err)
	}
}
