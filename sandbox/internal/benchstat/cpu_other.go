//go:build !unix

package benchstat

import "time"

// ProcessCPU is zero where getrusage is missing: CPU figures read 0.
func ProcessCPU() time.Duration { return 0 }
