package controlplane_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/writhq/writ/controlplane/localcluster"
)

// TestSnapshotOnStop: a graceful stop leaves a snapshot of everything the
// server applied, so that its next start replays none of it.
func TestSnapshotOnStop(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	for range 3 {
		if _, err := d.c.Submit(context.Background(), d.intent(t, "echo", `{"msg":"hi"}`), nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	applied := localcluster.AppliedIndex(d.s)
	if err := d.s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	store, err := raft.NewFileSnapshotStore(filepath.Join(d.dir, "raft"), 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := store.List()
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshot after a graceful stop: %v", err)
	}
	if snaps[0].Index < applied {
		t.Fatalf("the newest snapshot is at index %d, the server had applied %d", snaps[0].Index, applied)
	}
}
