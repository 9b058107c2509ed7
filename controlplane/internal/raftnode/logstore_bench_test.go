package raftnode

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkLogStores appends batches of entries the size of an admission's
// (1,154 bytes) to each log store, each batch one fsynced StoreLogs as
// Raft's leader writes them, and compacts the prefix as snapshots do; the
// figure to compare is each store's time per batch against bolt's in the
// same run.
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
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j := range logs {
						logs[j] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data}
						next++
					}
					if err := s.StoreLogs(logs); err != nil {
						b.Fatal(err)
					}
					if next > 20_000 && next%8192 < uint64(batch) {
						first, _ := s.FirstIndex()
						if err := s.DeleteRange(first, next-10_000); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}
