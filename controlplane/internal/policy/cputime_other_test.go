//go:build !linux

package policy

import "time"

// cpuTime returns the time f took on the clock: without a thread's CPU time
// to read, a loaded machine counts too.
func cpuTime(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
