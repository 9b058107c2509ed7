package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
)

// startEnvCPUProfile starts a CPU profile of this process into the file
// $WRIT_CPUPROFILE names, when it is set, and returns what stops and writes
// it, with a heap profile beside it (writeEnvMemProfile). writ bench load
// --cpuprofile sets it for the servers and agents it starts, which write
// their profiles when they stop. A file that cannot be
// created is reported and the command runs unprofiled.
func startEnvCPUProfile(errw io.Writer) (stop func()) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintf(errw, "writ: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(errw, "writ: %s: %v\n", cpuProfileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		writeEnvMemProfile(errw, path)
	}
}

// writeEnvMemProfile writes, beside the CPU profile at cpuPath, the heap
// profile of the process's life (cpuPath less ".pprof", plus ".mem.pprof"):
// `go tool pprof -sample_index=alloc_objects` shows where it allocated.
func writeEnvMemProfile(errw io.Writer, cpuPath string) {
	path := strings.TrimSuffix(cpuPath, ".pprof") + ".mem.pprof"
	// A name of its own making: never through a link someone else put there.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		fmt.Fprintf(errw, "writ: %s: %v\n", cpuProfileEnv, err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintf(errw, "writ: %s: %v\n", cpuProfileEnv, err)
	}
}
