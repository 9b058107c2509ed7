package cgroup

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// killMembers sends SIGKILL to the processes listed as the group's members
// that still are. A listed member may end before it is signalled and its
// pid be given to a process outside the group: killing by pid could then
// reach a stranger. So each listed pid is first pinned to one process with
// a pidfd, the members are listed again, and only the pinned processes
// listed again are signalled, through their pidfd. A pinned process that
// the second listing names was alive then, hence the holder of its pid, a
// member; one whose pid went to a member meanwhile is dead, and its pidfd
// signals nothing. Kernels before 5.3 (no pidfd_open) get kill(pid).
func killMembers(listed []int, members func() []int) { signalMembers(listed, members, unix.SIGKILL) }

// signalMembers is killMembers with another signal.
func signalMembers(listed []int, members func() []int, sig unix.Signal) {
	fds := make(map[int]int, len(listed))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, pid := range listed {
		fd, err := unix.PidfdOpen(pid, 0)
		switch {
		case err == nil:
			fds[pid] = fd
		case err == unix.ENOSYS:
			_ = syscall.Kill(pid, sig)
		}
	}
	if len(fds) == 0 {
		return
	}
	for _, pid := range members() {
		if fd, ok := fds[pid]; ok {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
	}
}

// Terminate sends SIGTERM to every process in the group but except (0:
// none), once: the first step of a graceful stop, which Kill completes. It
// reports whether the group had any other member to signal.
func (g *Group) Terminate(except int) bool {
	var pids []int
	for _, pid := range g.members() {
		if pid != except {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return false
	}
	signalMembers(pids, g.members, unix.SIGTERM)
	return true
}
