//go:build !linux

package process

import (
	"fmt"
	"os"
	"syscall"
)

// runAs is nil: outside Linux tools run as the agent's own user.
func (d *Driver) runAs() *syscall.Credential { return nil }

// User says whom tools run as.
func (d *Driver) User() string {
	return fmt.Sprintf("the agent's own user (uid %d)", os.Geteuid())
}

func handOver(string, *syscall.Credential) (*os.File, error) {
	return nil, fmt.Errorf("process: switching users is Linux only")
}

func startIn(f *os.File) string { return f.Name() }
