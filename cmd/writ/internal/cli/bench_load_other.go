//go:build !linux

package cli

import "os/exec"

// stopWithParent does nothing where the kernel has no parent-death signal.
func stopWithParent(*exec.Cmd) {}
