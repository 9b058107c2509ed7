//go:build unix

package benchstat

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time the process has used, user and system, all
// threads.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
