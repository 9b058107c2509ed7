package raftnode

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// BenchmarkLogStores appends batches of entries the size of an admission's
// (1,154 bytes) to each log store, each batch one fsynced StoreLogs as
// Raft's leader writes them, and compacts the prefix as snapshots do; the
// figure to compare is each store's time per batch against bolt's in the
// same run. p99-ns/entry and max-ns/entry are the 99th percentile and the
// longest of the StoreLogs calls, per entry: with bolt, an append that finds
// the journal full waits for its copy into bbolt (run enough appends to fill
// the 2 MiB journal several times, e.g. -benchtime 6000x at batch=1).
func BenchmarkLogStores(b *testing.B) {
	for _, store := range LogStores {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/batch=%d", store, batch), func(b *testing.B) {
				dir := b.TempDir()
				s, err := openLogStore(Config{Dir: dir, LogStore: store, Logger: quiet()}, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				data := bytes.Repeat([]byte{'x'}, 1154)
				logs := make([]*raft.Log, batch)
				next := uint64(1)
				b.SetBytes(int64(batch * len(data)))
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j := range logs {
						logs[j] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
						next++
					}
					start := time.Now()
					if err := s.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
					if next > 20_000 && next%8192 < uint64(batch) {
						first, _ := s.FirstIndex()
						if err := s.DeleteRange(first, next-10_000); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				slices.Sort(took)
				if n := len(took); n > 0 {
					b.ReportMetric(float64(took[n*99/100])/float64(batch), "p99-ns/entry")
					b.ReportMetric(float64(took[n-1])/float64(batch), "max-ns/entry")
				}
			})
		}
	}
}
