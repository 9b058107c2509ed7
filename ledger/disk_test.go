package ledger_test

import (
	"testing"

	"github.com/writhq/writ/ledger"
)

// newDiskStore opens a disk store in dir that the test closes at its end.
func newDiskStore(t testing.TB, dir string) *ledger.DiskStore {
	t.Helper()
	s, err := ledger.OpenDisk(ledger.DefaultDiskConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
