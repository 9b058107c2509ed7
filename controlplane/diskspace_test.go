package controlplane

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/writhq/writ/internal/testtier"
)

// TestYieldLeadership: a leader told that its FSM waits for disk space
// hands the leadership to another server of a real 3-server cluster; a
// follower told so changes nothing.
func TestYieldLeadership(t *testing.T) {
	testtier.Slow(t, "a cluster of three servers")
	base := DefaultConfig()
	base.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers, _, err := StartLocalCluster(ctx, t.TempDir(), 3, base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Close(context.Background())
		}
	}()
	leader := func() *Server {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, s := range servers {
				if s.IsLeader() {
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
			s.yieldLeadership() // a follower: nothing to hand on
		}
	}
	if leader() != old {
		t.Fatal("a follower's yield moved the leadership")
	}
	old.yieldLeadership()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := leader(); l != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader still leads 20 s after it yielded")
		}
	}
}
