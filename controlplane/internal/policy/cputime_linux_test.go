package policy

import (
	"runtime"
	"syscall"
	"time"
)

// cpuTime runs f on one OS thread and returns the CPU time that thread
// spent in it, user and system: unlike the time on the clock, what other
// processes on a loaded machine take does not count.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1 // RUSAGE_THREAD
	var before, after syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &before); err != nil {
		panic(err)
	}
	f()
	if err := syscall.Getrusage(rusageThread, &after); err != nil {
		panic(err)
	}
	spent := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return spent(after) - spent(before)
}
