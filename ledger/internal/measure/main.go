// Command measure reports what a server holding N receipts costs: resident
// memory and the time to reopen its ledger, and the latency of answering
// GET /v1/receipts/{index}. It builds the store first if the directory holds
// fewer leaves, then measures in a fresh child process so that building does
// not count. It is for `make bench` and by hand, not for CI:
//
//	go run ./ledger/internal/measure -dir /var/tmp/writ-ledger -n 10000000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/writhq/writ/ledger"
)

func main() {
	dir := flag.String("dir", "", "store directory (kept between runs)")
	n := flag.Int64("n", 1_000_000, "receipts the store should hold")
	leafSize := flag.Int("leaf", 1024, "bytes per receipt")
	proofs := flag.Int("proofs", 10_000, "receipts to prove after reopening")
	scrub := flag.Bool("scrub", false, "also time a full Scrub after reopening")
	child := flag.Bool("reopen", false, "internal: measure a reopen in this process")
	flag.Parse()
	if *dir == "" {
		log.Fatal("measure: -dir is required")
	}
	signer, vkey, err := ledger.NewSigner("writ.measure/ledger", make([]byte, 32))
	if err != nil {
		log.Fatal(err)
	}
	if *child {
		if err := reopen(*dir, vkey, *proofs, *scrub); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := build(*dir, *n, *leafSize, signer, vkey); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-reopen", "-dir", *dir, "-proofs", fmt.Sprint(*proofs), fmt.Sprintf("-scrub=%t", *scrub))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatal(err)
	}
}

// build appends receipts of leafSize bytes until the store holds n, without
// fsync per batch (one Sync at the end), and publishes a checkpoint.
func build(dir string, n int64, leafSize int, signer note.Signer, vkey string) error {
	cfg := ledger.DefaultDiskConfig(dir)
	cfg.NoSync = true
	store, err := ledger.OpenDisk(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	l, err := ledger.Open(context.Background(), store, ledger.Config{VerifierKey: vkey, TailCheck: 1024})
	if err != nil {
		return err
	}
	start, from := time.Now(), l.Size()
	pad := strings.Repeat("x", leafSize)
	batch := make([][]byte, 0, 4096)
	for i := from; i < n; i++ {
		leaf := fmt.Appendf(nil, `{"index":%d,"pad":"`, i)
		leaf = append(leaf, pad[:max(0, leafSize-len(leaf)-2)]...)
		batch = append(batch, append(leaf, '"', '}'))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := l.Append(batch...); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := store.Sync(); err != nil {
		return err
	}
	if c, _, ok := l.Latest(); !ok || c.Size != l.Size() {
		if _, err := l.Publish(signer); err != nil {
			return err
		}
	}
	if added := l.Size() - from; added > 0 {
		d := time.Since(start)
		fmt.Printf("built: %d receipts of %d bytes in %v (%.0f appends/s)\n", added, leafSize, d.Round(time.Millisecond), float64(added)/d.Seconds())
	}
	return nil
}

// reopen measures opening the store as a server does, then proving receipts.
func reopen(dir, vkey string, proofs int, scrub bool) error {
	start := time.Now()
	store, err := ledger.OpenDisk(ledger.DefaultDiskConfig(dir))
	if err != nil {
		return err
	}
	defer store.Close()
	cfg := ledger.DefaultConfig()
	cfg.VerifierKey = vkey
	l, err := ledger.Open(context.Background(), store, cfg)
	if err != nil {
		return err
	}
	opened := time.Since(start)
	c, _, _ := l.Latest()
	rng := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, proofs)
	for i := range lat {
		t := time.Now()
		if _, err := l.ProveReceipt(rng.Int64N(c.Size)); err != nil {
			return err
		}
		lat[i] = time.Since(t)
	}
	slices.Sort(lat)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("store: %d receipts, checkpoint size %d\n", l.Size(), c.Size)
	fmt.Printf("reopen: %v (tail check of %d leaves)\n", opened.Round(time.Microsecond), cfg.TailCheck)
	if proofs > 0 {
		fmt.Printf("receipt+proof (%d random): p50 %v, p99 %v\n", proofs, lat[proofs/2], lat[proofs*99/100])
	}
	fmt.Printf("memory: %s, %s, Go heap in use %.1f MiB\n", procStatus("VmRSS"), procStatus("VmHWM"), float64(ms.HeapInuse)/(1<<20))
	if scrub {
		start := time.Now()
		if err := l.Scrub(context.Background()); err != nil {
			return err
		}
		fmt.Printf("scrub: %v for %d receipts; memory after: %s\n", time.Since(start).Round(time.Millisecond), l.Size(), procStatus("VmHWM"))
	}
	return nil
}

// procStatus returns one line of /proc/self/status, or a note where there is none.
func procStatus(key string) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return key + ": unavailable"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key+":") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return key + ": unavailable"
}
