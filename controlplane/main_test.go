package controlplane

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// parallelTests is how many of this package's parallel tests run at once
// when the caller does not say (-test.parallel). They spend their time
// waiting, on Raft, QUIC handshakes and timers, not computing, so Go's
// default of GOMAXPROCS (2 on the development machine) leaves the CPU idle.
// 8 rather than 16: 16 gained a few seconds more under -short and loads the
// machine further while CI runs every package at once under -race.
const parallelTests = 8

// TestMain raises -test.parallel to parallelTests unless it was given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelTests)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
