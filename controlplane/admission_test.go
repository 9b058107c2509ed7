package controlplane_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/writhq/writ/protocol"

	"github.com/writhq/writ/controlplane/localcluster"
)

// TestBudgetRaceThroughGroupCommit: concurrent submissions for the last units
// of a run's budget go through group commit, and exactly as many as the
// budget allows are admitted; every other one is rejected budget_exhausted.
func TestBudgetRaceThroughGroupCommit(t *testing.T) {
	t.Parallel()
	d := startDev(t)
	ctx := context.Background()
	const budget, n = 5, 40
	if err := d.admin.Admin(ctx, "PUT", "tenants/"+d.creds.Tenant, []byte(fmt.Sprintf(`{"run_budget":%d}`, budget))); err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = d.intent(t, "echo", `{"msg":"race"}`, func(in *protocol.Intent) {
			in.ID, in.IdempotencyKey, in.RunID = fmt.Sprintf("race-%d", i), fmt.Sprintf("race-key-%d", i), "race-run"
		})
	}
	d.node.Hold.Store(true) // results go through group commit too: none while this counts admissions
	entries0, commands0 := localcluster.GroupStats(d.s)
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for _, b := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := d.c.Submit(ctx, b, nil, 0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case r.State == "rejected" && r.Error != nil:
				outcomes[string(r.Error.Code)]++
			case r.State == "rejected":
				outcomes["rejected without error"]++
			default:
				outcomes["admitted"]++
			}
		}()
	}
	wg.Wait()
	if outcomes["admitted"] != budget || outcomes["budget_exhausted"] != n-budget || len(outcomes) != 2 {
		t.Errorf("got %v, want %d admitted and %d budget_exhausted", outcomes, budget, n-budget)
	}
	entries, commands := localcluster.GroupStats(d.s)
	if commands-commands0 != n || entries-entries0 > n || entries == entries0 {
		t.Errorf("group commit proposed %d admissions in %d entries, want all %d", commands-commands0, entries-entries0, n)
	}
}
