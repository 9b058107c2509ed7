package ledger_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/writhq/writ/ledger"
)

// Benchmark sizes come from the environment so that CI runs small and
// `make bench` runs the 10-million-leaf figures of issue 6:
//
//	WRIT_LEDGER_BENCH_LEAVES  tree size for BenchmarkInclusionProof (default 100000)
//	WRIT_LEDGER_BENCH_DIR     keep that tree here between runs (default: a temp dir)
const (
	benchLeafSize = 1024
	benchBatch    = 256 // leaves per Append, as one Raft batch would carry
)

func benchLeaves(n int) [][]byte {
	leaves := make([][]byte, n)
	for i := range leaves {
		l := []byte(fmt.Sprintf(`{"index":%d,"type":"writ.receipt/v1","pad":"`, i))
		for len(l) < benchLeafSize-2 {
			l = append(l, 'x')
		}
		leaves[i] = append(l, '"', '}')
	}
	return leaves
}

// sha256PerLeaf measures the baseline right after the run it is compared
// with, on the same leaves: raw SHA-256 of n of them (at most 1<<18).
func sha256PerLeaf(leaves [][]byte, n int) time.Duration {
	n = max(1, min(n, 1<<18))
	start := time.Now()
	for i := range n {
		sha256.Sum256(leaves[i%len(leaves)])
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkAppend measures appends of 1 KiB leaves into the tree (hashing,
// tree hashes, store writes; no Raft), one op per leaf, in batches of 256, and
// reports appends/s and the cost relative to raw SHA-256 of the same bytes
// measured in the same run.
func BenchmarkAppend(b *testing.B) {
	leaves := benchLeaves(4096)
	stores := []struct {
		name string
		open func(b *testing.B) ledger.Store
	}{
		{"sha256-baseline", nil},
		{"mem", func(b *testing.B) ledger.Store { return ledger.NewMemStore() }},
		{"disk-nosync", func(b *testing.B) ledger.Store {
			cfg := ledger.DefaultDiskConfig(b.TempDir())
			cfg.NoSync = true
			return must(ledger.OpenDisk(cfg))
		}},
		{"disk-fsync", func(b *testing.B) ledger.Store { return must(ledger.OpenDisk(ledger.DefaultDiskConfig(b.TempDir()))) }},
		// As a server appends: no fsync in Append, a Sync in the background
		// at most every 2 ms, and a last one inside the timing.
		{"disk-defersync", func(b *testing.B) ledger.Store {
			cfg := ledger.DefaultDiskConfig(b.TempDir())
			cfg.DeferSync = true
			return must(ledger.OpenDisk(cfg))
		}},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(benchLeafSize)
			if s.open == nil {
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sha256.Sum256(leaves[i%len(leaves)])
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				return
			}
			store := s.open(b)
			defer store.Close()
			l := must(ledger.Open(context.Background(), store, ledger.DefaultConfig()))
			stop := make(chan struct{})
			synced := make(chan error, 1)
			b.ResetTimer()
			if s.name == "disk-defersync" {
				go func() { synced <- syncEvery(l, 2*time.Millisecond, stop) }()
			}
			for done := 0; done < b.N; {
				at := done % len(leaves)
				n := min(benchBatch, b.N-done, len(leaves)-at)
				if _, err := l.Append(leaves[at : at+n]...); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			if s.name == "disk-defersync" {
				close(stop)
				if err := <-synced; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			perOp := b.Elapsed() / time.Duration(b.N)
			base := sha256PerLeaf(leaves, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			b.ReportMetric(float64(perOp)/float64(base), "x_sha256")
		})
	}
}

// BenchmarkAppendOne measures the latency of appending one 1 KiB leaf, as a
// server's FSM does for the one receipt of a quiet Raft batch: with an fsync
// in every Append, and with DeferSync and a Sync in the background at most
// every 2 ms. It reports p50 and p99 of the Append calls, and the p50 ratio to
// a 4 KiB write and fsync in the same directory, measured first.
func BenchmarkAppendOne(b *testing.B) {
	leaves := benchLeaves(1024)
	for _, deferSync := range []bool{false, true} {
		name := "disk-fsync"
		if deferSync {
			name = "disk-defersync"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			base := fsyncBaseline(b, dir)
			cfg := ledger.DefaultDiskConfig(dir)
			cfg.DeferSync = deferSync
			store := must(ledger.OpenDisk(cfg))
			defer store.Close()
			l := must(ledger.Open(context.Background(), store, ledger.DefaultConfig()))
			stop := make(chan struct{})
			synced := make(chan error, 1)
			go func() { synced <- syncEvery(l, 2*time.Millisecond, stop) }()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := l.Append(leaves[i%len(leaves)]); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			close(stop)
			if err := <-synced; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			slices.Sort(lat)
			p50 := lat[len(lat)/2]
			b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50_µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99_µs")
			b.ReportMetric(float64(p50)/float64(base), "x_fsync")
		})
	}
}

// fsyncBaseline is the median of 20 4 KiB writes, each fsynced, in dir.
func fsyncBaseline(b *testing.B, dir string) time.Duration {
	f, err := os.CreateTemp(dir, "fsync")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	lat := make([]time.Duration, 20)
	for i := range lat {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// syncEvery syncs l at most every interval until stop, then once more.
func syncEvery(l *ledger.Log, interval time.Duration, stop <-chan struct{}) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return l.Sync()
		case <-t.C:
		}
		if err := l.Sync(); err != nil {
			return err
		}
	}
}

// BenchmarkInclusionProof measures inclusion proofs at random indexes of a
// disk store of WRIT_LEDGER_BENCH_LEAVES leaves: the proof alone, and the whole
// GET /v1/receipts answer (leaf read and checked, proof, self-check). It reports
// p50 and p99 latency and the p50 ratio to verifying the same proof, a pure-CPU
// baseline of about log2(N) SHA-256 calls measured first in the same run.
func BenchmarkInclusionProof(b *testing.B) {
	n := int64(100_000)
	if s := os.Getenv("WRIT_LEDGER_BENCH_LEAVES"); s != "" {
		var err error
		if n, err = strconv.ParseInt(s, 10, 64); err != nil || n < 1 {
			b.Fatalf("WRIT_LEDGER_BENCH_LEAVES=%q: want a positive integer", s)
		}
	}
	l := benchTree(b, n)
	defer l.Close()
	c, _, _ := l.Latest()
	var baseP50 time.Duration // from verify-baseline, which runs first
	for _, mode := range []string{"verify-baseline", "proof", "receipt"} {
		b.Run(fmt.Sprintf("%s/leaves=%d", mode, n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			lat := make([]time.Duration, 0, b.N)
			leafAt := func(i int64) []byte { return must(l.Leaf(i)) }
			for i := 0; i < b.N; i++ {
				idx := rng.Int64N(c.Size)
				var err error
				switch mode {
				case "verify-baseline":
					leaf, p := leafAt(idx), must(l.InclusionProof(idx, c.Size))
					start := time.Now()
					err = ledger.CheckInclusion(c, idx, leaf, p)
					lat = append(lat, time.Since(start))
				case "proof":
					start := time.Now()
					_, err = l.InclusionProof(idx, c.Size)
					lat = append(lat, time.Since(start))
				case "receipt":
					start := time.Now()
					_, err = l.ProveReceipt(idx)
					lat = append(lat, time.Since(start))
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			p50 := lat[len(lat)/2]
			b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50_µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99_µs")
			if mode == "verify-baseline" {
				baseP50 = p50
			} else if baseP50 > 0 {
				b.ReportMetric(float64(p50)/float64(baseP50), "x_verify_p50")
			}
		})
	}
}

// benchTree opens (building if needed) a disk log of n small leaves with a
// checkpoint over all of them. Leaf size does not change proof cost.
func benchTree(b *testing.B, n int64) *ledger.Log {
	dir := os.Getenv("WRIT_LEDGER_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	} else {
		dir = fmt.Sprintf("%s/leaves-%d", dir, n)
	}
	signer, vkey, err := ledger.NewSigner("writ.bench/ledger", make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	cfg := ledger.DefaultDiskConfig(dir)
	cfg.NoSync = true
	store := must(ledger.OpenDisk(cfg))
	l := must(ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey, TailCheck: 1024}))
	if l.Size() > n {
		b.Fatalf("%s holds %d leaves, more than %d", dir, l.Size(), n)
	}
	batch := make([][]byte, 0, 4096)
	for i := l.Size(); i < n; i++ {
		batch = append(batch, []byte(fmt.Sprintf(`{"index":%d}`, i)))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := l.Append(batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if c, _, ok := l.Latest(); !ok || c.Size != n {
		if _, err := l.Publish(signer); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
