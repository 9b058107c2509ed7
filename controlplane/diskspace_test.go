package controlplane_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/writhq/writ/controlplane"
	"github.com/writhq/writ/controlplane/localcluster"
	"github.com/writhq/writ/internal/testtier"
)

// TestYieldLeadership: a leader told that its FSM waits for disk space
// hands the leadership to another server of a real 3-server cluster; a
// follower told so changes nothing.
func TestYieldLeadership(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := controlplane.DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lc, err := localcluster.Start(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	servers := lc.Servers
	leader := func() *controlplane.Server {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, s := range servers {
				if localcluster.IsLeader(s) {
					return s
				}
			}
		}
		t.Fatal("no leader")
		return nil
	}
	old := leader()
	for _, s := range servers {
		if s != old {
			controlplane.YieldLeadership(s) // a follower: nothing to hand on
		}
	}
	if leader() != old {
		t.Fatal("a follower's yield moved the leadership")
	}
	controlplane.YieldLeadership(old)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := leader(); l != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader still leads 20 s after it yielded")
		}
	}
}
