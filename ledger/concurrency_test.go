package ledger_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/writhq/writ/internal/testtier"
	"github.com/writhq/writ/ledger"
)

// Readers prove and verify receipts while the log is appended to and new
// checkpoints are published; run with -race.
func TestConcurrentProveWhileAppending(t *testing.T) {
	t.Parallel()
	stores := map[string]ledger.Store{"mem": ledger.NewMemStore(), "disk": newDiskStore(t, t.TempDir())}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) { testConcurrentProve(t, newFixtureOn(t, "writ.test/a", 1, store)) })
	}
}

func testConcurrentProve(t *testing.T, f *fixture) {
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(0); !done.Load(); i++ {
				c, _, _ := f.log.Latest()
				rp, err := f.log.ProveReceipt((i*7 + int64(r)) % c.Size)
				if err == nil {
					_, err = ledger.VerifyReceipt(f.v, rp)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 1; i < testtier.Rounds(400, 100); i++ {
		if _, err := f.log.Append(receipt(i)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if _, err := f.log.Publish(f.signer); err != nil {
				t.Fatal(err)
			}
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("reader: %v", err)
	}
}
