package runc

import (
	"sync/atomic"
	"time"

	"github.com/writhq/writ/sandbox"

	"github.com/writhq/writ/sandbox/internal/cgroup"
)

// cpuPoll is how often watchCPU reads the container's CPU time.
const cpuPoll = 50 * time.Millisecond

// cpuWatch enforces limits.cpu_seconds from outside the container for a
// runtime whose tools escape RLIMIT_CPU (gVisor's sentry does not apply
// it): it reads the container cgroup's CPU time until stopped, and kills
// the container once that time reaches the limit.
type cpuWatch struct {
	seen   atomic.Int64 // the most CPU time read, in nanoseconds
	killed atomic.Bool
	stop   chan struct{}
	done   chan struct{}
}

func startCPUWatch(g *cgroup.Group, limit time.Duration, kill func()) *cpuWatch {
	w := &cpuWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(cpuPoll)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			used, ok := g.CPU()
			if !ok {
				continue
			}
			w.seen.Store(int64(used))
			if limit > 0 && used >= limit && !w.killed.Swap(true) {
				kill()
			}
		}
	}()
	return w
}

// finish stops the watch and corrects out: the runtime removes the cgroup
// as it exits, so the CPU time proc read afterwards may be only the
// runtime's own; and a run the watch killed is a timeout with reason
// "cpu", as a tool killed at its hard RLIMIT_CPU is.
func (w *cpuWatch) finish(out *sandbox.Outcome) {
	close(w.stop)
	<-w.done
	if seen := time.Duration(w.seen.Load()); seen > out.Usage.UserCPU+out.Usage.SystemCPU {
		out.Usage.UserCPU, out.Usage.SystemCPU = seen, 0
	}
	if w.killed.Load() && out.Status == sandbox.StatusError {
		out.Status, out.Reason = sandbox.StatusTimeout, "cpu"
	}
}
