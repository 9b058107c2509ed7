package bwrap

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// awaitBlock returns once the process whose /proc directory is proc is
// blocked reading fd: bwrap's sandbox waiting on --block-fd, its mounts
// made, its root the sandbox's, nothing of the tool started. bwrap writes
// the sandbox's pid to --info-fd before its setup, so the pid alone does not
// say the setup is done; /proc/PID/syscall does (readable by the process's
// own user and its ancestors, as the agent is). errGone when the process
// ended first. It polls, from 50 µs apart up to 2 ms apart: bwrap's setup
// takes a few milliseconds.
func awaitBlock(proc *os.File, fd int) error {
	pd := int(proc.Fd())
	wait := 50 * time.Microsecond
	for {
		b, err := readAt(pd, "syscall")
		if err != nil {
			if errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENOENT) {
				return errGone
			}
			return fmt.Errorf("bwrap: watch the sandbox's setup: %w", err)
		}
		if nr, arg0, ok := parseSyscall(b); ok && nr == unix.SYS_READ && arg0 == uint64(fd) {
			return nil
		}
		if st, err := readAt(pd, "stat"); err != nil || dead(st) {
			return errGone
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Millisecond)
	}
}

// readAt reads the small file name below the directory dirfd.
func readAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 512)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}
