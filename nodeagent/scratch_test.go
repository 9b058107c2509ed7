package nodeagent

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/writhq/writ/protocol"
	"github.com/writhq/writ/sandbox"
)

// scratchRecorder is a tier that records what each invocation said of its
// workspace, and how the workspace was when the run began.
type scratchRecorder struct {
	sandbox.Driver
	mu      sync.Mutex
	scratch []bool
	empty   []bool
}

func (r *scratchRecorder) Run(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	names, err := os.ReadDir(inv.Workspace)
	r.mu.Lock()
	r.scratch = append(r.scratch, inv.Scratch)
	r.empty = append(r.empty, err == nil && len(names) == 0)
	r.mu.Unlock()
	return r.Driver.Run(ctx, inv)
}

// TestRunsInAScratchWorkspace: every run gets a fresh, empty workspace,
// marked scratch (the agent removes it unread), and the workspace is gone
// once the result is in.
func TestRunsInAScratchWorkspace(t *testing.T) {
	var rec *scratchRecorder
	h := newHarness(t, 2, func(d sandbox.Driver) sandbox.Driver {
		rec = &scratchRecorder{Driver: d}
		return rec
	})
	for range 2 {
		d := h.dispatch("witness", h.witnessParams(false))
		if err := h.x.Handle(context.Background(), sign(t, d, serverKey), servers); err != nil {
			t.Fatal(err)
		}
		if r := h.outbox()[d.ID]; r == nil || r.Status != protocol.StatusOK {
			t.Fatalf("%s: %+v", d.ID, r)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.scratch) != 2 || !rec.scratch[0] || !rec.scratch[1] || !rec.empty[0] || !rec.empty[1] {
		t.Fatalf("invocations: scratch %v, empty at the start %v; want two, both scratch and empty", rec.scratch, rec.empty)
	}
	entries, err := os.ReadDir(h.dir + "/work")
	if err != nil || len(entries) != 0 {
		t.Fatalf("the work directory after the runs holds %v (%v); want nothing", entries, err)
	}
}
