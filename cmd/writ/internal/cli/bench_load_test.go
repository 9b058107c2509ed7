package cli

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestClosedLoop: every worker makes at least one call however short the
// duration, every call is counted once as completed or failed, the first
// failure is kept, and only completed calls are timed.
func TestClosedLoop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conc      int
		failEvery int // 0: none fail
	}{
		{"one worker", 1, 0},
		{"eight workers", 8, 0},
		{"every call fails", 4, 1},
		{"every third call fails", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			workers := map[int]int{}
			r := closedLoop(tc.conc, 0, func(w, i int) error {
				mu.Lock()
				workers[w]++
				mu.Unlock()
				if tc.failEvery > 0 && i%tc.failEvery == 0 {
					return errors.New("refused")
				}
				return nil
			})
			if len(workers) != tc.conc {
				t.Fatalf("%d workers called, want %d", len(workers), tc.conc)
			}
			calls := 0
			for _, n := range workers {
				calls += n
			}
			if r.submitted != int64(calls) || r.completed+r.failed != r.submitted {
				t.Fatalf("submitted %d, completed %d, failed %d; %d calls", r.submitted, r.completed, r.failed, calls)
			}
			if (r.failed > 0) != (r.firstErr == "refused") || (tc.failEvery == 1 && r.completed != 0) || (tc.failEvery == 0 && r.failed != 0) {
				t.Fatalf("completed %d, failed %d, first error %q", r.completed, r.failed, r.firstErr)
			}
			if r.lat.N != int(r.completed) {
				t.Fatalf("%d timed, want %d", r.lat.N, r.completed)
			}
		})
	}
}

// TestLoadCellFinish: rates and CPU per operation from the counts, and
// none from an empty measurement.
func TestLoadCellFinish(t *testing.T) {
	for _, tc := range []struct {
		completed int64
		seconds   float64
		cpu       time.Duration
		perSec    float64
		perOp     time.Duration
	}{
		{100, 2, time.Second, 50, 10 * time.Millisecond},
		{3, 1, 30 * time.Millisecond, 3, 10 * time.Millisecond},
		{0, 1, time.Second, 0, 0},
		{5, 0, time.Second, 0, 200 * time.Millisecond},
	} {
		c := loadCell{Completed: tc.completed, Seconds: tc.seconds, CPU: tc.cpu, Allocs: 600, AllocBytes: 6000}
		c.finish()
		if tc.completed > 0 && (c.AllocsPerOp != 600/float64(tc.completed) || c.AllocBytesPerOp != 6000/float64(tc.completed)) {
			t.Errorf("%d completed with 600 allocations of 6000 bytes: %v and %v per op", tc.completed, c.AllocsPerOp, c.AllocBytesPerOp)
		}
		if tc.completed == 0 && (c.AllocsPerOp != 0 || c.AllocBytesPerOp != 0) {
			t.Errorf("none completed: %v allocations per op", c.AllocsPerOp)
		}
		if c.PerSecond != tc.perSec || c.CPUPerOp != tc.perOp {
			t.Errorf("%d in %vs with %v: %v/s and %v per op, want %v/s and %v", tc.completed, tc.seconds, tc.cpu, c.PerSecond, c.CPUPerOp, tc.perSec, tc.perOp)
		}
	}
}

// TestLoadGoals: each goal is judged against its own row, and dev wasm's
// carries its two parts alone from the same run — the wasm tier's run (that
// row's sandbox floor) and the control plane's share (dev sim at the same
// concurrency); a goal whose row was not measured is left out, and so are
// parts whose row was not.
func TestLoadGoals(t *testing.T) {
	us := time.Microsecond
	row := func(setup, agent string, conc int, cpu time.Duration, sandbox time.Duration) loadRow {
		r := loadRow{Setup: setup, Agent: agent, Concurrency: conc, Writ: loadCell{CPUPerOp: cpu}}
		if sandbox > 0 {
			r.Sandbox = &loadCell{CPUPerOp: sandbox}
		}
		return r
	}
	all := []loadRow{
		row("dev", "wasm", 1, 9000*us, 900*us), row("dev", "sim", 1, 2000*us, 0),
		row("dev", "wasm", 16, 4000*us, 1000*us), row("dev", "sim", 16, 900*us, 0),
		row("cluster", "wasm", 16, 8000*us, 1000*us), row("cluster", "sim", 16, 350*us, 0),
	}
	got := loadGoals(all)
	want := []loadGoal{
		{Row: "dev wasm 16", Goal: 1200 * us, Measure: 4000 * us, Met: false, SandboxPart: 1000 * us, ControlPlanePart: 900 * us},
		{Row: "cluster sim 16", Goal: 400 * us, Measure: 350 * us, Met: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("goals %+v, want %+v", got, want)
	}
	if got := loadGoals(all[2:3]); len(got) != 1 || got[0].SandboxPart != 0 || got[0].ControlPlanePart != 0 {
		t.Fatalf("dev wasm 16 measured alone: %+v, want its goal without parts", got)
	}
	if got := loadGoals(all[:2]); len(got) != 0 {
		t.Fatalf("no row at 16: %+v, want no goals", got)
	}
}
