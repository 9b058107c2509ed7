//go:build !linux

package cgroup

import "syscall"

// killMembers kills the listed processes by pid: there are no cgroups
// outside Linux, so no group ever has members there.
func killMembers(listed []int, _ func() []int) {
	for _, pid := range listed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Terminate does nothing: there are no cgroups outside Linux.
func (g *Group) Terminate(except int) bool { return false }
