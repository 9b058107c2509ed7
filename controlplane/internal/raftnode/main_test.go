package raftnode

import (
	"flag"
	"os"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

// TestMain runs 4 parallel tests at once (8 under -short, whose run holds
// fewer of them) unless -parallel says otherwise: they mostly wait on
// Raft's election and heartbeat timers and on the children of the crash
// tests, not on the CPU. The tests of several nodes stay serial: a leader
// starved on a loaded machine loses its lease.
func TestMain(m *testing.M) {
	flag.Parse()
	n := 4
	if testing.Short() {
		n = 8
	}
	testtier.Parallel(n)
	os.Exit(m.Run())
}
