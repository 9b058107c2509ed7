//go:build unix

package cli

import (
	"os"
	"os/signal"
	"path/filepath"
	"runtime/metrics"
	"syscall"

	"github.com/writhq/writ/internal/jsonx"
)

// allocsEnv names the file a writ process writes its heap allocation
// counters to each time it gets SIGUSR1 (see startEnvAllocs): how writ bench
// load counts the allocations of the servers and agents it starts.
const allocsEnv = "WRIT_ALLOCS"

// processAllocs is what the file holds: how many SIGUSR1 the process has
// answered, and the objects and bytes it has allocated on the heap since it
// started (runtime/metrics, cumulative).
type processAllocs struct {
	Seq     uint64 `json:"seq"`
	Objects uint64 `json:"objects"`
	Bytes   uint64 `json:"bytes"`
}

// startEnvAllocs, when $WRIT_ALLOCS names a file, answers every SIGUSR1 by
// writing the process's allocation counters to it (a new file renamed over
// the old, so a reader never sees half of one). It returns what stops it.
func startEnvAllocs() (stop func()) {
	path := os.Getenv(allocsEnv)
	if path == "" {
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		samples := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
		var seq uint64
		for {
			select {
			case <-sig:
			case <-done:
				return
			}
			seq++
			metrics.Read(samples)
			a := processAllocs{Seq: seq}
			if samples[0].Value.Kind() == metrics.KindUint64 {
				a.Objects = samples[0].Value.Uint64()
			}
			if samples[1].Value.Kind() == metrics.KindUint64 {
				a.Bytes = samples[1].Value.Uint64()
			}
			b, _ := jsonx.Marshal(a)
			writeReplacing(path, b)
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// allocsSignal asks a process started with $WRIT_ALLOCS for its counters.
var allocsSignal os.Signal = syscall.SIGUSR1

// writeReplacing replaces the file at path with b, through a new file of a
// random name beside it (never one someone else made, or a link), renamed
// over path once written.
func writeReplacing(path string, b []byte) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		os.Remove(f.Name())
	}
}
