package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/writhq/writ/client"
	"github.com/writhq/writ/controlplane/localcluster"
)

// TestResultAndOutputOneEntry: a run's output and its result are proposed
// together, one Raft entry of two commands, so recording a result costs one
// commit, not two in series; the output is still served beside the result.
func TestResultAndOutputOneEntry(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	params := `{"msg":"together"}`
	// The first intent settles whatever the server records once (the node's
	// session, its tools) before the entries are counted.
	if sub, err := d.c.Submit(ctx, d.intent(t, "echo", `{"msg":"warm"}`), nil, 10*time.Second); err != nil || sub.State != "completed" {
		t.Fatalf("submit: %+v %v", sub, err)
	}
	entries0, commands0 := localcluster.GroupStats(d.s)
	sub, err := d.c.Submit(ctx, d.intent(t, "echo", params), nil, 10*time.Second)
	if err != nil || sub.State != "completed" {
		t.Fatalf("submit: %+v %v", sub, err)
	}
	entries, commands := localcluster.GroupStats(d.s)
	// The admission is one entry of one command; the output and result one
	// entry of two.
	if got, want := [2]uint64{entries - entries0, commands - commands0}, [2]uint64{2, 3}; got != want {
		t.Fatalf("one intent proposed %d entries of %d commands through group commit, want %d of %d", got[0], got[1], want[0], want[1])
	}
	r, err := d.c.Intent(ctx, sub.IntentID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if data, ok, err := client.ResponseOutput(r); err != nil || !ok || string(data) != params {
		t.Fatalf("signed read: got output %q (%v, %v), want %q", data, ok, err, params)
	}
}
