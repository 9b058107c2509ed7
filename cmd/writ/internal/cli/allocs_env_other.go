//go:build !unix

package cli

import "os"

const allocsEnv = "WRIT_ALLOCS"

type processAllocs struct {
	Seq, Objects, Bytes uint64
}

// startEnvAllocs does nothing where there is no SIGUSR1.
func startEnvAllocs() (stop func()) { return func() {} }

// allocsSignal: there is none; asking fails.
var allocsSignal os.Signal = os.Interrupt
