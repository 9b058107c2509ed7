package raftnode

import (
	"os"
	"testing"

	"github.com/writhq/writ/internal/testtier"
)

// TestMain runs 4 parallel tests at once unless -parallel says otherwise:
// they mostly wait on Raft's election and heartbeat timers and on the
// children of the crash tests, not on the CPU. The tests of several nodes
// stay serial: a leader starved on a loaded machine loses its lease.
func TestMain(m *testing.M) {
	testtier.Parallel(4)
	os.Exit(m.Run())
}
