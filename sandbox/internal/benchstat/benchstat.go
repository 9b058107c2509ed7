// Package benchstat measures a sandbox tier next to its raw baseline in the
// same benchmark run and reports both medians and their ratio, because the
// machines are shared and only ratios compare across runs.
package benchstat

import (
	"slices"
	"testing"
	"time"
)

// Compare runs raw and tier alternately b.N times each and reports
// "p50-us" (tier), "raw-p50-us", "ratio" and "over-us" (tier minus raw).
// Alternating keeps a noisy neighbour from favouring either side.
func Compare(b *testing.B, raw, tier func() error) {
	b.Helper()
	// Warm both (caches, page cache, compiled code).
	for i := 0; i < 3; i++ {
		if err := raw(); err != nil {
			b.Fatalf("raw: %v", err)
		}
		if err := tier(); err != nil {
			b.Fatalf("tier: %v", err)
		}
	}
	rs := make([]time.Duration, 0, b.N)
	ts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := raw(); err != nil {
			b.Fatalf("raw: %v", err)
		}
		rs = append(rs, time.Since(start))
		start = time.Now()
		if err := tier(); err != nil {
			b.Fatalf("tier: %v", err)
		}
		ts = append(ts, time.Since(start))
	}
	b.StopTimer()
	r, t := Median(rs), Median(ts)
	b.ReportMetric(float64(t.Microseconds()), "p50-us")
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-us")
	b.ReportMetric(float64(t)/float64(max(r, 1)), "ratio")
	b.ReportMetric(float64((t - r).Microseconds()), "over-us")
}

// Median of ds (sorted in place).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
