package controlplane

import (
	"flag"
	"os"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

// parallelTests is how many of this package's parallel tests run at once
// when the caller does not say (-test.parallel). They spend their time
// waiting, on Raft, QUIC handshakes and timers, not computing, so Go's
// default of GOMAXPROCS (2 on the development machine) leaves the CPU idle.
// 16 under -short (the fast tier: 27 s to 22 s for the package on the
// development machine); 8 otherwise, as CI runs every package at once
// under -race, where more would load the machine further.
func parallelTests() int {
	if testing.Short() {
		return 16
	}
	return 8
}

// TestMain raises -test.parallel to parallelTests unless it was given.
func TestMain(m *testing.M) {
	flag.Parse()
	testtier.Parallel(parallelTests())
	os.Exit(m.Run())
}
