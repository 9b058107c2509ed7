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
// Under -short (the fast tier) all of them at once: the package's tests
// took 3 s of CPU in 18 s of wall time at 16, most of them waiting out an
// expiry or a node's wait; 8 otherwise, as CI runs every package at once
// under -race, where more would load the machine further.
func parallelTests() int {
	if testing.Short() {
		return 128
	}
	return 8
}

// TestMain raises -test.parallel to parallelTests unless it was given.
func TestMain(m *testing.M) {
	flag.Parse()
	testtier.Parallel(parallelTests())
	os.Exit(m.Run())
}
