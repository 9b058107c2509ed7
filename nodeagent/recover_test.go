package nodeagent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// stalling runs the tool, then stops the agent's path right there, once:
// the tool has done its work, and the agent never gets to record how it
// ended — as when it is killed mid-run.
type stalling struct {
	sandbox.Driver
	once atomic.Bool
	ran  chan struct{}
	hang chan struct{}
}

func (s *stalling) Run(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	out, err := s.Driver.Run(ctx, inv)
	if s.once.CompareAndSwap(false, true) {
		close(s.ran)
		<-s.hang
	}
	return out, err
}

func TestCrashAfterBeginIsUnknownAndNeverRunsAgain(t *testing.T) {
	stall := &stalling{ran: make(chan struct{}), hang: make(chan struct{})}
	h := newHarness(t, 1, func(d sandbox.Driver) sandbox.Driver { stall.Driver = d; return stall })
	d := h.dispatch("witness", h.witnessParams(false))
	raw := sign(t, d, serverKey)
	errc := make(chan error, 1)
	go func() { errc <- h.x.Handle(context.Background(), raw, servers) }()
	<-stall.ran

	// The crash: the store is closed under the run, and a new agent opens it.
	h.store.Close()
	h.openStore()
	x := h.newExecutor(1)
	n, err := x.Recover()
	if err != nil || n != 1 {
		t.Fatalf("Recover: %d, %v; want 1 run reported", n, err)
	}
	r := h.outbox()[d.ID]
	if r == nil || r.Status != protocol.StatusUnknown || r.Error != InterruptedError || r.ExitCode != -1 ||
		r.Sandbox != "process" || r.IntentID != d.IntentID || r.Output != "" {
		t.Fatalf("got %+v, want status unknown for the interrupted run", r)
	}
	// Pushed again after the restart, the dispatch does not run again.
	if err := x.Handle(context.Background(), raw, servers); err != nil {
		t.Fatal(err)
	}
	if n, err := x.Recover(); n != 0 || err != nil {
		t.Fatalf("second Recover: %d, %v; want nothing left", n, err)
	}
	if got := h.runs(); got != 1 {
		t.Fatalf("the witness ran %d times, want 1", got)
	}
	// The old agent's late attempt to record its result finds its store gone.
	close(stall.hang)
	if err := <-errc; err == nil {
		t.Fatal("the crashed agent's Handle recorded a result into a closed store")
	}
	if r := h.outbox()[d.ID]; r.Status != protocol.StatusUnknown || len(h.outbox()) != 1 {
		t.Fatalf("after the old run returned: %+v; want the unknown result only", h.outbox())
	}
}

func TestCloseStopsRunningToolsAndRecordsThem(t *testing.T) {
	h := newHarness(t, 1)
	raw := sign(t, h.dispatch("witness", h.witnessParams(true)), serverKey)
	errc := make(chan error, 1)
	go func() { errc <- h.x.Handle(context.Background(), raw, servers) }()
	waitFor(t, "the run", func() bool { return h.runs() == 1 })
	h.x.Close()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r := h.outbox()["dsp-1"]; r == nil || r.Status != protocol.StatusError || r.Sandbox != "process" {
		t.Fatalf("got %+v, want an error result for the killed run", r)
	}
	if err := h.x.Handle(context.Background(), sign(t, h.dispatch("echo", `{}`), serverKey), servers); err != ErrClosed {
		t.Fatalf("Handle after Close: got %v, want ErrClosed", err)
	}
}
