// Package benchstat measures a sandbox tier next to its raw baseline in the
// same benchmark run and reports both medians and their ratio, because the
// machines are shared and only ratios compare across runs.
package benchstat

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// Side is one of the things a benchmark alternates.
type Side struct {
	Name string
	Run  func() error
}

// Figures are one side's: the median wall time of a run and the process's
// CPU time per run (user and system, every thread, so the garbage
// collector's work is counted; the mean, so a collection that lands in one
// run is spread over all of them).
type Figures struct {
	Name string
	P50  time.Duration
	CPU  time.Duration
}

// Alternate runs the sides one after another, warm rounds untimed and
// then n rounds timed, and returns each side's figures in order.
// Alternating keeps a noisy neighbour from favouring any side.
func Alternate(sides []Side, warm, n int) ([]Figures, error) {
	for range warm {
		for _, s := range sides {
			if err := s.Run(); err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
		}
	}
	walls := make([][]time.Duration, len(sides))
	cpus := make([]time.Duration, len(sides))
	for range n {
		for i, s := range sides {
			c0, start := ProcessCPU(), time.Now()
			err := s.Run()
			walls[i] = append(walls[i], time.Since(start))
			cpus[i] += ProcessCPU() - c0
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
		}
	}
	out := make([]Figures, len(sides))
	for i, s := range sides {
		out[i] = Figures{Name: s.Name, P50: Median(walls[i]), CPU: cpus[i] / time.Duration(max(n, 1))}
	}
	return out, nil
}

// Compare runs raw and tier alternately b.N times each and reports
// "p50-us" (tier), "raw-p50-us", "ratio" and "over-us" (tier minus raw),
// and the CPU per run of each, "cpu-us" and "raw-cpu-us".
func Compare(b *testing.B, raw, tier func() error) {
	b.Helper()
	b.ResetTimer()
	f, err := Alternate([]Side{{"raw", raw}, {"tier", tier}}, 3, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	r, t := f[0], f[1]
	b.ReportMetric(float64(t.P50.Microseconds()), "p50-us")
	b.ReportMetric(float64(r.P50.Microseconds()), "raw-p50-us")
	b.ReportMetric(float64(t.P50)/float64(max(r.P50, 1)), "ratio")
	b.ReportMetric(float64((t.P50 - r.P50).Microseconds()), "over-us")
	b.ReportMetric(float64(t.CPU.Microseconds()), "cpu-us")
	b.ReportMetric(float64(r.CPU.Microseconds()), "raw-cpu-us")
}

// Median of ds (sorted in place).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
