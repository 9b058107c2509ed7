package ledger_test

import (
	"testing"

	"github.com/writhq/writ/ledger"
	"github.com/writhq/writ/ledger/ledgertest"
)

func TestMemStoreConformance(t *testing.T) {
	t.Parallel()
	ledgertest.TestStore(t, func(t *testing.T, dir string) ledger.Store { return ledger.NewMemStore() })
}

func TestDiskStoreConformance(t *testing.T) {
	t.Parallel()
	ledgertest.TestDurableStore(t, func(t *testing.T, dir string) ledger.Store {
		s, err := ledger.OpenDisk(ledger.DefaultDiskConfig(dir))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
